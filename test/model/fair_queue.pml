/*
 * fair_queue.pml: a SPIN (Promela) model of redlock-asio's fair (FIFO) lock over N = 3 independent
 * Redis nodes, quorum Q = 2, 2 waiters (doc/locks.md, "Fair lock" and "Why the order holds over N nodes").
 *
 * WHAT IS MODELLED
 *   Node k holds the lock key key[k] (0 = free, c+1 = waiter c), a queue (rank[k*2+c]: 0 = not queued,
 *   else the waiter's place; the lowest rank is the head) and the ticket counter C[k]. Every script runs
 *   atomically (d_step), as a Lua script does.
 *   - acquire(T): if T > 0, join the queue with ticket T (if not in it) and raise C to T. Grant (set the
 *     key) iff the key is free or ours, and the queue is empty or we are its head; a refused waiter whose
 *     key this is gives it back. The answer carries C.
 *   - leave(): delete the key if ours and leave the queue (release by the holder, or giving up).
 *   - Order: a queue orders its waiters by (ticket, token), the same total order on every node
 *     (waiter 0's token is the lower).
 *   A waiter's first attempt is acquire(0) to every node; it waits for a quorum of answers (or all of
 *   them). Granted on a quorum: it holds the lock. Otherwise its ticket is T = 1 + the highest C among
 *   the answers; it cleans up the nodes that did not refuse and sends acquire(T), which joins the
 *   queues, to every node (with fewer answers than a quorum, after a timeout, it asks again without a
 *   ticket). There is no separate enqueue request. Each later attempt is acquire(T) to every node,
 *   decided by a quorum of grants or by enough refusals (errors included) to make a quorum impossible;
 *   a failed one is cleaned up and retried.
 *   Messages: waiter c talks to node k over its own FIFO channel (one connection); a node serves a
 *   request at any later time, so a request can be served after its waiter moved on (decided, began its
 *   next attempt, holds, released, gave up, died): its answer is then stale and ignored.
 *   The holder from before (HOLDER=1): when the waiters ask, the lock is held by another client X, which
 *   is not queued (it got the lock while the queues were empty); X's keys go (release or expiry) at any
 *   time, node by node. X stands for a third waiter served first: without it, only the other waiter
 *   can refuse a waiter's first attempt, so no waiter is ever queued on a quorum when the other one
 *   asks, and FIFO would hold vacuously.
 *   Node down (DOWN=2): node 2 is down for the whole run; every request to it fails at once (an error).
 *   Faults (FAULTS=1, one fault in all): a waiter times out (stops waiting for the answers of an
 *   undecided attempt), gives up (leaves every queue) or dies (even while holding the lock).
 *   Keys and entries: a dead waiter's queue entries drop out (its heartbeat ends) and its keys expire;
 *   any key expires unless it backs a grant its owner counted in its current attempt or its hold. A live
 *   waiter's entries never drop out: it heartbeats with every attempt, well within its waiter TTL.
 *
 * PROPERTIES
 *   P1 mutual exclusion: never two waiters in the critical section.
 *   P2 FIFO: if waiter A was queued on a quorum when waiter B began its first attempt, B does not get
 *      the lock while A still waits (A got it first, gave up or died): ghost bitmask ahead[B].
 *   P3 progress (-DNP to spin and to gcc, pan -l -f, weak fairness): every execution in which no waiter
 *      ever gets the lock again is finite. A cycle without "progress" is two live waiters retrying
 *      forever: a deadlock. Weak fairness: the nodes serve the requests sent to them; X goes; a dead
 *      waiter's entries drop out and its keys expire; a holder releases (or dies).
 *
 * MODELLING SHORTCUTS (each keeps every way to violate P1-P3; together they make the model small)
 *   - No clean-up message. The clean-up of a failed attempt (delete the key where ours, sent to the
 *     nodes that did not refuse) is always followed on the same connection by the next acquire or a
 *     leave(), and either does what it does: an acquire that refuses gives our key back, one that grants
 *     keeps it, with or without the clean-up before it. So the clean-up's only effect is to free the key
 *     earlier, which the expiry of a key that backs nothing (below) covers: a grant stops backing
 *     anything when its attempt ends. For P3 the next acquire or leave() is served (fairness) and frees
 *     or re-grants the key. A refusing node needs no clean-up because its refusal left none of our keys
 *     there (it answered our latest acquire; the earlier ones were served before): the acquire script's
 *     give-back does it, and the model checks that script.
 *   - Expiry when it matters. Another waiter's key and a dead waiter's entry are read only by an
 *     acquire (leave() touches only its own). So a key expires (an entry drops out) at the moment that
 *     changes a script's result: an acquire refused only because of an expirable key and/or a dead
 *     waiter's entry may instead be granted after they went (SERVE_HELPED). Earlier expiry changes
 *     nothing anyone sees. For P3 the going is forced: process Holder, and a dead waiter's process,
 *     which drops its entries and keys (both only with -DNP: the safety search does not need them).
 *   - Stale answers without attempt numbers: an answer counts iff the waiter is collecting and no later
 *     acquire of it is queued on that connection (acqs[], a function of the channel's contents): then
 *     it answers the waiter's latest acquire, the current attempt's.
 *   - At most two attempts in flight (CAP = 2): a node may lag a whole attempt behind a waiter; a waiter
 *     whose connection still holds the requests of two attempts waits before the next one.
 *   - The decision of an attempt and the start of the next are one step (the pause between them is the
 *     time before the nodes serve the new requests, which they may delay at will).
 *   - Faults at the waiter's steps: it gives up before an attempt (not the first) or just after sending
 *     one, dies just after sending an attempt or while holding; a timeout ends an undecided attempt at
 *     any moment. Dying or giving up later in an attempt would only keep its grants protected and its
 *     entries in place longer, and the answers it forgets change nothing else.
 *   - Fairness with 2 node processes instead of 6: Server(c) serves every connection of waiter c. A
 *     waiter that retries forever needs room (CAP) on each of its connections, so none of them starves;
 *     a waiter that waits, or is done, sends nothing, and Server(c) drains its connections.
 *
 * NOT MODELLED
 *   Time (TTLs, pauses, the watchdog): a holder keeps the keys of its quorum while it holds the lock
 *   (mutual exclusion with expiry is the plain lock's, checked by fencing.pml's P3 and the validity
 *   rule). Node restarts that lose a queue: as for fencing, a node without persistence must stay down
 *   for a lock TTL. The one-node form (the acquire script INCRs the ticket). Wake-ups by release
 *   messages: a refused waiter retries at any time (they only make it retry sooner). A third waiter:
 *   X stands for one served first. More than one fault.
 *
 * CONFIGURATIONS (spin -D...; the CONFIGS of run_spin.cmake)
 *   DOWN=none|2 (default none), HOLDER=0|1 (default 1), FAULTS=0|1 (default 1), CAP (default 2).
 *   The ctest model_fair_queue_spin runs, for each variant, the safety and the non-progress search of
 *   "DOWN=2" (X and a fault, node 2 down), "HOLDER=1,FAULTS=0" and "HOLDER=0,FAULTS=1" (three nodes up),
 *   and the safety search of the default "HOLDER=1,FAULTS=1" (three nodes up): its non-progress search
 *   is too large for every test run (by hand: 0 errors, 18,378,468 states, 5.5 min and 1.9 GB with
 *   gcc -O2 -DCOLLAPSE).
 *   Variant 0 with gcc -O1 (the ctest's build; -O2 runs ~30% faster and builds ~3 times slower):
 *     DOWN=2             safety    80,506 states  0.2 s  137 MB   non-progress    463,766 states   3 s  178 MB
 *     HOLDER=1,FAULTS=0  safety   397,385 states  1.4 s  168 MB   non-progress  1,900,291 states  12 s  332 MB
 *     HOLDER=0,FAULTS=1  safety   209,201 states  0.6 s  149 MB   non-progress    429,722 states   6 s  175 MB
 *     HOLDER=1,FAULTS=1  safety 3,217,626 states   12 s  470 MB
 *
 * VARIANTS (-DVARIANT=n)
 *   0  the protocol above: P1, P2, P3 hold in every configuration.
 *   1  a ticket per node (each node orders by arrival): the two waiters are first on different nodes,
 *      the third is down: neither ever gets a quorum (P3: non-progress cycle, DOWN=2).
 *   2  the ticket from one node's counter (the first answer), not a quorum's: while X holds the lock,
 *      waiter 1 is queued on two nodes with ticket 1 and the third has not seen it; waiter 0 asks, the
 *      third node answers first (C = 0): ticket 1, the tie goes to waiter 0's lower token, and waiter 0
 *      gets the lock while waiter 1 waits (P2: assertion violated, HOLDER=1 on three nodes).
 *   3  equal tickets ordered by arrival instead of by token: the two waiters of one tie are first on
 *      different nodes, the third is down (P3: non-progress cycle, DOWN=2).
 *   4  the first attempt ignores the queue (grants whenever the key is free): a newcomer overtakes a
 *      waiter queued while X held the lock (P2: assertion violated).
 *
 * RUN BY HAND (one configuration; the ctest runs them all through test/model/run_spin.cmake)
 *   D="-DVARIANT=0 -DDOWN=2"    # or -DHOLDER=1 -DFAULTS=0, or -DHOLDER=0 -DFAULTS=1, or nothing
 *   spin -a $D fair_queue.pml && gcc -DSAFETY -O2 -w -o pan pan.c && ./pan -m10000
 *   spin -a -DNP $D fair_queue.pml && gcc -DNP -O2 -w -o pan pan.c && ./pan -m10000 -l -f
 *   "errors: 0" is expected for variant 0. `spin -t [-DNP] $D fair_queue.pml | grep MSC` narrates a
 *   counterexample (-p for every step); `./pan -i` (gcc -DREACH) searches for the shortest one.
 */

#ifndef VARIANT
#define VARIANT 0
#endif
#ifndef FAULTS
#define FAULTS 1
#endif
#ifndef HOLDER
#define HOLDER 1
#endif
#ifndef CAP
#define CAP 2
#endif
#define none 3
#ifndef DOWN
#define DOWN none
#endif
#if DOWN != none && DOWN != 2
#error "DOWN is none or 2 (the nodes are alike: the node down is node 2)"
#endif

#define N 3
#define Q 2
#define NC 2
#define X 2             /* the holder from before: key[k] == X + 1 */

/* requests (one byte: an acquire's ticket is 0 or its waiter's ticket, which is chosen once) */
#define ACQ0 1          /* acquire(0): the first attempt, without a ticket */
#define ACQT 2          /* acquire(T) with the waiter's ticket tick[c] */
#define LEAVE 3         /* release, or giving up: delete the key if ours, leave the queue */

/* waiter states */
#define COLLECT 1       /* an attempt is collecting answers */
#define HOLD 2          /* in the critical section */
#define DONE 3          /* released, or gave up */
#define DEAD 4

/* node state */
byte key[N] = (HOLDER -> X + 1 : 0);    /* 0 = free, c+1 = waiter c, X+1 = the holder from before */
byte rank[N * NC];      /* rank[k*NC+c]: place of waiter c in node k's queue, 0 = not queued */
byte C[N];              /* ticket counters */

/* waiter -> node connections, FIFO per (waiter, node) */
chan q[NC * N] = [CAP] of { byte };
byte acqs[NC * N];      /* acquires in q[i] (a function of q[i]'s contents: adds no state) */

/* waiter state */
byte cstate[NC];
byte tick[NC];          /* the waiter's ticket, 0 = none yet */
byte answered[NC];      /* nodes that answered the current attempt (bitmask) */
byte refused[NC];       /* nodes that refused it (bitmask) */
byte highC[NC];         /* highest C among the answers */
#if VARIANT == 2
byte firstC[NC];        /* C of the first answer */
#endif
byte faults = FAULTS;

/* ghost variables */
byte ahead[NC];         /* waiters queued on a quorum when the waiter's first attempt began */
byte gone;              /* waiters that got the lock, gave up or died */

hidden byte m;          /* the request being served */
hidden byte mt;         /* its ticket */
hidden byte help;       /* SERVE_HELPED */

#define BIT(k) (1 << (k))
#define COUNT3(s) (((s) & 1) + (((s) >> 1) & 1) + (((s) >> 2) & 1))
#define CH(c, k) ((c) * N + (k))
#define R(k, c) rank[(k) * NC + (c)]
#define QUEUED(k, c) (R(k, c) != 0)
#define UP(k) ((k) != DOWN)
#if DOWN == none
#define ERRORS 0
#define UP_NODES 7
#else
#define ERRORS 1
#define UP_NODES 3
#endif
#define GRANTS(c) COUNT3(answered[c] & ~refused[c])
/* the attempt cannot reach a quorum of grants any more: refusals and errors (the node down) */
#define IMPOSSIBLE(c) (COUNT3(refused[c]) + ERRORS >= N - Q + 1)
#define QUEUED_ON_QUORUM(c) (QUEUED(0, c) + QUEUED(1, c) + QUEUED(2, c) >= Q)

/* a key that backs a counted grant of its owner's current attempt, or its hold, does not expire */
#define PROTECTED(k) \
    (key[k] != 0 && key[k] != X + 1 && \
     (cstate[key[k] - 1] == COLLECT || cstate[key[k] - 1] == HOLD) && \
     ((answered[key[k] - 1] & ~refused[key[k] - 1]) & BIT(k)) != 0)

/* the rank waiter c takes when it joins node k's queue with ticket t */
#if VARIANT == 1
#define PLACE(k, c, t) (QUEUED(k, 1 - (c)) -> R(k, 1 - (c)) + 1 : 1)
#elif VARIANT == 3
#define PLACE(k, c, t) ((t) * 4 + (QUEUED(k, 1 - (c)) && R(k, 1 - (c)) / 4 == (t) -> R(k, 1 - (c)) % 4 + 1 : 1))
#else
#define PLACE(k, c, t) ((t) * NC + (c))
#endif
/* the queue lets c be granted (once acquire(t) joined it): it is empty or c is its head */
#define HEAD_OR_EMPTY(k, c) (!QUEUED(k, 1 - (c)) || (QUEUED(k, c) && R(k, c) < R(k, 1 - (c))))
#if VARIANT == 4
#define QUEUE_OK(k, c, t) ((t) == 0 || HEAD_OR_EMPTY(k, c))
#else
#define QUEUE_OK(k, c, t) HEAD_OR_EMPTY(k, c)
#endif
#define KEY_OK(k, c) (key[k] == 0 || key[k] == (c) + 1)

#define JOIN(k, c, t) \
    if :: !QUEUED(k, c) -> R(k, c) = PLACE(k, c, t) :: else fi; \
    if :: C[k] < (t) -> C[k] = (t) :: else fi

/* node k's answer to waiter c, counted if it answers c's current attempt (no later acquire queued) */
#if VARIANT == 2
#define FIRST_C(c, k) if :: tick[c] == 0 && answered[c] == 0 -> firstC[c] = C[k] :: else fi;
#else
#define FIRST_C(c, k)
#endif
#define ANSWER(c, k, yes) \
    if \
    :: acqs[CH(c, k)] == 0 && cstate[c] == COLLECT -> \
        FIRST_C(c, k) \
        answered[c] = answered[c] | BIT(k); \
        if :: yes -> skip :: else -> refused[c] = refused[c] | BIT(k) fi; \
        if :: tick[c] == 0 && C[k] > highC[c] -> highC[c] = C[k] :: else fi \
    :: else \
    fi

/* takes the request at the head of q[CH(c, k)] into (m, mt) */
#define TAKE(c, k) \
    q[CH(c, k)]?m; \
    if \
    :: m == ACQT -> mt = tick[c]; acqs[CH(c, k)]-- \
    :: m == ACQ0 -> mt = 0; acqs[CH(c, k)]-- \
    :: else -> mt = 0 \
    fi

#define GRANT(c, k) \
    key[k] = (c) + 1; \
    printf("MSC: node %d grants waiter %d (ticket %d)\n", k, c, mt); \
    ANSWER(c, k, true)

/* the script of the request (m, mt) of waiter c on node k. With help (SERVE_HELPED), an acquire
 * refused only because of a key that may have expired by now and/or the entry of a dead waiter that
 * may have dropped out by now is granted after they went (see MODELLING SHORTCUTS). */
#define SERVE(c, k) \
    if \
    :: m == ACQ0 || m == ACQT -> \
        if :: mt != 0 -> JOIN(k, c, mt) :: else fi; \
        if \
        :: KEY_OK(k, c) && QUEUE_OK(k, c, mt) -> GRANT(c, k) \
        :: help && (KEY_OK(k, c) || !PROTECTED(k)) && (QUEUE_OK(k, c, mt) || cstate[1 - (c)] == DEAD) -> \
            if \
            :: key[k] == X + 1 -> printf("MSC: node %d: the key of X expired\n", k); key[k] = 0 \
            :: !KEY_OK(k, c) && key[k] != X + 1 -> \
                printf("MSC: node %d: the key of waiter %d expired\n", k, key[k] - 1); key[k] = 0 \
            :: else \
            fi; \
            if \
            :: !QUEUE_OK(k, c, mt) -> \
                printf("MSC: node %d: dead waiter %d dropped out\n", k, 1 - (c)); R(k, 1 - (c)) = 0 \
            :: else \
            fi; \
            GRANT(c, k) \
        :: else -> \
            if :: key[k] == (c) + 1 -> key[k] = 0 :: else fi; \
            printf("MSC: node %d refuses waiter %d (ticket %d)\n", k, c, mt); \
            ANSWER(c, k, false) \
        fi \
    :: m == LEAVE -> \
        if :: key[k] == (c) + 1 -> key[k] = 0 :: else fi; \
        R(k, c) = 0; \
        printf("MSC: node %d: waiter %d leaves\n", k, c) \
    fi; \
    m = 0; mt = 0; help = 0

/* help may change the result: an acquire at the head, and an expirable key of another or a dead
 * waiter's entry (otherwise SERVE_HELPED does what SERVE_PLAIN does: the same successor state) */
#define MAY_HELP(c, k) \
    ((q[CH(c, k)]?[ACQ0] || q[CH(c, k)]?[ACQT]) && \
     ((!KEY_OK(k, c) && !PROTECTED(k)) || (cstate[1 - (c)] == DEAD && QUEUED(k, 1 - (c)))))
#define SERVE_PLAIN(c, k) d_step { nempty(q[CH(c, k)]) -> TAKE(c, k); SERVE(c, k) }
#define SERVE_HELPED(c, k) d_step { MAY_HELP(c, k) -> help = 1; TAKE(c, k); SERVE(c, k) }
#define NODE_OPTIONS(c, k) :: SERVE_PLAIN(c, k) :: SERVE_HELPED(c, k)

#define SEND(c, k, r) \
    if \
    :: UP(k) -> q[CH(c, k)]!r; if :: r != LEAVE -> acqs[CH(c, k)]++ :: else fi \
    :: else \
    fi
#define SEND_ALL(c, r) d_step { SEND(c, 0, r); SEND(c, 1, r); SEND(c, 2, r) }

/* room for n more requests on every connection of waiter c to a node that is up: a waiter whose
 * node lags a whole attempt behind waits for it (CAP = 2: the requests of two attempts in flight) */
#define ROOM1(c, k, n) (!UP(k) || len(q[CH(c, k)]) + (n) <= CAP)
#define ROOM(c, n) (ROOM1(c, 0, n) && ROOM1(c, 1, n) && ROOM1(c, 2, n))

/* a new attempt of waiter c: acquire(0) until it has a ticket, then acquire(T) */
#define ATTEMPT(c) \
    answered[c] = 0; refused[c] = 0; highC[c] = 0; \
    cstate[c] = COLLECT; \
    SEND_ALL(c, (tick[c] == 0 -> ACQ0 : ACQT))

#if VARIANT == 2
#define FORGET(c) answered[c] = 0; refused[c] = 0; highC[c] = 0; firstC[c] = 0
#else
#define FORGET(c) answered[c] = 0; refused[c] = 0; highC[c] = 0
#endif

#define DIE(c) \
    cstate[c] = DEAD; gone = gone | BIT(c); FORGET(c); \
    printf("MSC: waiter %d dies\n", c); \
    goto dead
#define GIVE_UP(c) \
    cstate[c] = DONE; gone = gone | BIT(c); FORGET(c); \
    printf("MSC: waiter %d gives up\n", c); \
    SEND_ALL(c, LEAVE); \
    goto done

/* the first attempt waits for a quorum of answers (or all of them): their counters choose the ticket */
#define FIRST_DECIDED(c) (IMPOSSIBLE(c) && (COUNT3(answered[c]) >= Q || answered[c] == UP_NODES))
#define DECIDED(c) (tick[c] == 0 -> FIRST_DECIDED(c) : IMPOSSIBLE(c))
#if VARIANT == 2
#define TICKET(c) (firstC[c] + 1)
#else
#define TICKET(c) (highC[c] + 1)
#endif

active [NC] proctype Waiter()
{
    byte c = _pid;
    atomic {
        if :: QUEUED_ON_QUORUM(1 - c) && (gone & BIT(1 - c)) == 0 -> ahead[c] = BIT(1 - c) :: else fi;
        printf("MSC: waiter %d asks (ahead of it: %d)\n", c, ahead[c]);
        goto next
    }
    do
    :: atomic {
        GRANTS(c) >= Q ->
        printf("MSC: waiter %d holds the lock\n", c);
        assert(cstate[1 - c] != HOLD);              /* P1 mutual exclusion */
        assert((ahead[c] & ~gone) == 0);            /* P2 FIFO */
        cstate[c] = HOLD; highC[c] = 0;
        gone = gone | BIT(c);
        goto hold
    }
    :: atomic {
        /* the attempt failed, or times out (a fault; it changes something only while undecided).
         * Its clean-up needs no message of its own: see MODELLING SHORTCUTS. */
        GRANTS(c) < Q && (DECIDED(c) || faults > 0) && ROOM(c, 1) ->
        if
        :: DECIDED(c)
        :: else -> faults--; printf("MSC: waiter %d times out\n", c)
        fi;
        if
        :: tick[c] == 0 && COUNT3(answered[c]) >= Q ->
            /* with fewer answers (after a timeout) it asks again without a ticket */
            tick[c] = TICKET(c);
            printf("MSC: waiter %d takes ticket %d\n", c, tick[c])
        :: else
        fi;
next:   /* the next attempt, or a fault instead: give up before it, give up or die just after sending it */
        if
        :: ATTEMPT(c)
        :: cstate[c] == COLLECT && faults > 0 && ROOM(c, 1) -> faults--; GIVE_UP(c)
        :: faults > 0 && ROOM(c, 2) -> faults--; ATTEMPT(c); GIVE_UP(c)
        :: faults > 0 -> faults--; ATTEMPT(c); DIE(c)
        fi
    }
    od;
hold:
progress:
    if
    :: atomic {
        ROOM(c, 1) ->
        cstate[c] = DONE; FORGET(c);
        printf("MSC: waiter %d releases\n", c);
        SEND_ALL(c, LEAVE);
        goto done
    }
    :: atomic { faults > 0 -> faults--; DIE(c) }
    fi;
dead:
#ifdef NP
    /* the heartbeat of a dead waiter ends and its keys expire: under weak fairness this happens */
end_dead:
    do
    :: d_step {
        (key[0] == c + 1 || key[1] == c + 1 || key[2] == c + 1 || QUEUED(0, c) || QUEUED(1, c) || QUEUED(2, c)) ->
        if :: key[0] == c + 1 -> key[0] = 0 :: else fi;
        if :: key[1] == c + 1 -> key[1] = 0 :: else fi;
        if :: key[2] == c + 1 -> key[2] = 0 :: else fi;
        R(0, c) = 0; R(1, c) = 0; R(2, c) = 0
    }
    od;
#endif
done:
    skip
}


/* the nodes serve the requests of waiter c, each connection in order */
active [NC] proctype Server()
{
    byte c = _pid - NC;
end:
    do
    NODE_OPTIONS(c, 0)
    NODE_OPTIONS(c, 1)
#if DOWN == none
    NODE_OPTIONS(c, 2)
#endif
    od
}

#if defined(NP) && HOLDER
/* the holder from before releases, or its keys expire: under weak fairness this happens */
active proctype Holder()
{
    d_step {
        printf("MSC: X releases\n");
        if :: key[0] == X + 1 -> key[0] = 0 :: else fi;
        if :: key[1] == X + 1 -> key[1] = 0 :: else fi;
        if :: key[2] == X + 1 -> key[2] = 0 :: else fi
    }
}
#endif
