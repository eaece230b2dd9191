/*
 * rwlock.pml: a SPIN (Promela) model of redlock-asio's read-write lock (redlock::shared_mutex) over N = 3
 * independent Redis nodes, quorum Q = 2 for each side (doc/algorithms.md, "Read-write lock").
 *
 * WHAT IS MODELLED
 *   Node k holds the write key wkey[k] (0 = free, p+1 = process p), the readers' entries rd[k] (a bitmask of
 *   processes) and the waiting writers' marks mark[k] (a bitmask). Every script runs atomically (d_step), as a
 *   Lua script does:
 *   - read acquire (ACQ_R): the process that holds the write key there converts it into its entry (a downgrade:
 *     marks do not matter, its own goes); refused while another process holds the write key, or while a mark is
 *     there and the process has no entry yet (writer preference); otherwise adds the entry.
 *   - write acquire (ACQ_W, a waiting writer: it marks its wait first, granted or refused; ACQ_U, an upgrade:
 *     no mark): granted when the write key is free or its own and no other process has an entry.
 *   - clean-ups of a failed attempt: a reader's (CLEAN_R) removes its entry; a writer's (CLEAN_W) removes its key
 *     and entry and keeps its mark; an upgrade's (CLEAN_U) removes the write key only (its entry stays).
 *   - release (REL): the key, the entry and the mark.
 *   A process's attempt sends its request to every node that is up and is decided by a quorum of grants, or by
 *   refusals and errors (a node down) that make a quorum impossible; a failed attempt sends its clean-up to the
 *   nodes that did not refuse, then tries again. Messages: process p talks to node k over its own FIFO channel
 *   (one connection); a node serves a request at any later time, so an answer can come after its attempt was
 *   decided: it is then stale and ignored (an answer counts iff no later acquire of the process is queued on that
 *   connection and the process is collecting).
 *   Processes (pids: readers first, then writers):
 *   - a reader takes the read side (retrying until granted), reads, and releases; with UPGRADE it then tries once
 *     to upgrade: granted, it writes and releases; refused, its clean-up gives the write key back, it reads on and
 *     releases.
 *   - a writer takes the write side (marking its wait with every attempt), writes, and releases; with DOWNGRADE the
 *     first writer then downgrades once: granted, it reads and releases; refused, it releases everything.
 *   Faults (FAULTS=1, one fault in all): a waiting writer dies just after sending an attempt, or gives up; a reader
 *   dies while it reads; a process times out an undecided attempt.
 *   Expiry: what a dead process left on the nodes (keys, entries, marks) goes at any moment (its TTLs end; for a
 *   mark, its heartbeat's), in the safety search; in the non-progress search a process of its own removes them
 *   (weak fairness: it happens). A live process's keys and marks never expire: a holder's are kept by the validity
 *   rule and the watchdog (not modelled: fencing.pml and the lock's own tests cover expiry), a waiting writer's
 *   marks by its heartbeats.
 *
 * PROPERTIES
 *   P1 exclusion: a writer is never in its critical section beside a reader or another writer.
 *   P2 writer preference: a reader whose attempt began while a writer waited (that writer's attempt was refused by
 *      the nodes' answers, and it has not got the lock, given up or died since) does not read until that writer
 *      stops waiting: ghost bitmask ahead[].
 *   P3 progress (-DNP, pan -l -f, weak fairness): every execution in which nobody enters a critical section again
 *      is finite: no deadlock, no reader or writer retrying forever against a dead process's keys or marks.
 *   P4 downgrade: no other writer enters its critical section between a writer's and its downgraded read.
 *
 * MODELLING SHORTCUTS
 *   - Each process takes the lock once (and converts once); more rounds repeat the same interleavings.
 *   - A failed attempt's decision, its clean-up and the next attempt are one step (the pause between them is the
 *     time before the nodes serve the requests, which they may delay at will). No wake-up messages: a waiter
 *     retries at any time (messages only make it retry sooner).
 *   - At most two attempts in flight per connection (CAP = 2).
 *   - Two writers (DOWNGRADE) get only the safety search: two writers may split the nodes again and again (each
 *     wins one, a third is down or slow), which the random pause after a split vote breaks in the library and a
 *     model without probabilities cannot; the plain lock has the same limit.
 *
 * NOT MODELLED
 *   Time (TTLs, validity, the watchdog), node restarts, a fourth process, more than one fault, fencing (fencing.pml).
 *
 * CONFIGURATIONS (spin -D...; the CONFIGS of run_spin.cmake)
 *   default: two readers and one writer, three nodes up, FAULTS=1. DOWN=2: node 2 down for the whole run.
 *   UPGRADE=1: two readers that both try to upgrade, no writer. DOWNGRADE=1: two writers, the first downgrades
 *   (safety only). FAULTS=0|1. CAP (default 2; 1 leaves no room for a clean-up and the next attempt).
 *   The ctest model_rwlock_spin runs, for each variant, the safety and the non-progress search of "DOWN=2" (two
 *   readers, a writer, a fault, node 2 down) and "UPGRADE=1", and the safety search of "DOWNGRADE=1" and
 *   "FAULTS=0" (three nodes up). Variant 0 with gcc -O1 (pan -DNFAIR=3 for the non-progress search: six processes):
 *     DOWN=2       safety     73,151 states  0.1 s  138 MB   non-progress  122,179 states  0.9 s  145 MB
 *     UPGRADE=1    safety     49,864 states  0.1 s  134 MB   non-progress   73,569 states  0.2 s  136 MB
 *     DOWNGRADE=1  safety     89,755 states  0.1 s  138 MB
 *     FAULTS=0     safety  2,524,522 states  2.8 s  437 MB   (non-progress by hand: 0 errors, 4,853,507 states, 24 s,
 *                                                          779 MB)
 *   The default (three nodes up and a fault) is too large for every test run: by hand, safety 0 errors,
 *   18,217,518 states, 39 s, 2.3 GB.
 *
 * VARIANTS (-DVARIANT=n)
 *   0  the protocol above: P1 to P4 hold in every configuration.
 *   1  a read acquire ignores the marks: a reader that asks while the writer waits gets in first (P2: ahead).
 *   2  a write acquire ignores the readers' entries: a writer beside a reader (P1: cs_r).
 *   3  marks never expire: a writer that died waiting blocks the readers forever (P3: non-progress cycle).
 *   4  a downgrade that releases the write side, then asks for the read side: another writer gets in between
 *      (P4: since).
 *   5  an upgrade that waits (retries until granted) instead of trying once: two upgrading readers wait for each
 *      other forever (P3: non-progress cycle, UPGRADE=1).
 *
 * RUN BY HAND
 *   spin -a -DVARIANT=0 rwlock.pml && gcc -DSAFETY -O2 -w -o pan pan.c && ./pan -m10000
 *   spin -a -DNP -DVARIANT=0 rwlock.pml && gcc -DNP -O2 -w -o pan pan.c && ./pan -m10000 -l -f
 */

#ifndef VARIANT
#define VARIANT 0
#endif
#ifndef FAULTS
#define FAULTS 1
#endif
#ifndef UPGRADE
#define UPGRADE 0
#endif
#ifndef DOWNGRADE
#define DOWNGRADE 0
#endif
#define none 3
#ifndef DOWN
#define DOWN none
#endif
#if DOWN != none && DOWN != 2
#error "DOWN is none or 2 (the nodes are alike: the node down is node 2)"
#endif
#ifndef CAP
#define CAP 2
#endif

#define N 3
#define Q 2
#if UPGRADE
#define NR 2
#define NW 0
#elif DOWNGRADE
#define NR 0
#define NW 2
#else
#define NR 2
#define NW 1
#endif
#define P (NR + NW)

/* requests */
#define ACQ_R 1    /* read acquire (and a downgrade) */
#define ACQ_W 2    /* write acquire of a waiting writer: marks its wait */
#define ACQ_U 3    /* write acquire of an upgrade: no mark */
#define CLEAN_R 4
#define CLEAN_W 5
#define CLEAN_U 6
#define REL 7

/* process states */
#define IDLE 0
#define COLLECT 1
#define HOLD 2
#define DONE 3
#define DEAD 4

#define BIT(k) (1 << (k))
#define COUNT3(s) (((s) & 1) + (((s) >> 1) & 1) + (((s) >> 2) & 1))
#define CH(p, k) ((p) * N + (k))
#define UP(k) ((k) != DOWN)
#if DOWN == none
#define ERRORS 0
#else
#define ERRORS 1
#endif

/* node state */
byte wkey[N];       /* 0 free, p+1: process p holds the write key */
byte rd[N];         /* readers' entries */
byte mark[N];       /* waiting writers' marks */

/* process -> node connections */
chan q[P * N] = [CAP] of { byte };
byte acqs[P * N];   /* acquires queued on each connection */

/* process state */
byte pstate[P];
byte answered[P];
byte refused[P];
byte faults = FAULTS;

/* ghosts */
byte cs_r;          /* processes reading */
byte cs_w;          /* processes writing */
byte waiting;       /* writers whose wait was refused by the nodes' answers and who still wait */
byte ahead[P];      /* a reader's attempt began while these writers waited */
bool since;         /* another writer wrote since the downgrading writer's write (P4) */

hidden byte m;

#define GRANTS(p) COUNT3(answered[p] & ~refused[p])
#define IMPOSSIBLE(p) (COUNT3(refused[p]) + ERRORS >= N - Q + 1)

#if VARIANT == 1
#define MARK_BLOCKS(k, p) false
#else
#define MARK_BLOCKS(k, p) (mark[k] != 0 && (rd[k] & BIT(p)) == 0)
#endif
#if VARIANT == 2
#define READERS_BLOCK(k, p) false
#else
#define READERS_BLOCK(k, p) ((rd[k] & ~BIT(p)) != 0)
#endif

/* node k's answer to process p, counted if it answers p's current attempt */
#define ANSWER(p, k, yes) \
    if \
    :: acqs[CH(p, k)] == 0 && pstate[p] == COLLECT -> \
        answered[p] = answered[p] | BIT(k); \
        if :: yes -> skip :: else -> refused[p] = refused[p] | BIT(k) fi \
    :: else \
    fi

#define SERVE(p, k) \
    q[CH(p, k)]?m; \
    if \
    :: m == ACQ_R -> \
        acqs[CH(p, k)]--; \
        if \
        :: wkey[k] == (p) + 1 -> wkey[k] = 0; mark[k] = mark[k] & ~BIT(p); rd[k] = rd[k] | BIT(p); ANSWER(p, k, true) \
        :: wkey[k] != 0 && wkey[k] != (p) + 1 -> ANSWER(p, k, false) \
        :: wkey[k] == 0 && MARK_BLOCKS(k, p) -> ANSWER(p, k, false) \
        :: wkey[k] == 0 && !MARK_BLOCKS(k, p) -> rd[k] = rd[k] | BIT(p); ANSWER(p, k, true) \
        fi \
    :: m == ACQ_W || m == ACQ_U -> \
        acqs[CH(p, k)]--; \
        if :: m == ACQ_W -> mark[k] = mark[k] | BIT(p) :: else fi; \
        if \
        :: (wkey[k] == 0 || wkey[k] == (p) + 1) && !READERS_BLOCK(k, p) -> wkey[k] = (p) + 1; ANSWER(p, k, true) \
        :: else -> ANSWER(p, k, false) \
        fi \
    :: m == CLEAN_R -> rd[k] = rd[k] & ~BIT(p) \
    :: m == CLEAN_W -> \
        if :: wkey[k] == (p) + 1 -> wkey[k] = 0 :: else fi; \
        rd[k] = rd[k] & ~BIT(p) \
    :: m == CLEAN_U -> if :: wkey[k] == (p) + 1 -> wkey[k] = 0 :: else fi \
    :: m == REL -> \
        if :: wkey[k] == (p) + 1 -> wkey[k] = 0 :: else fi; \
        rd[k] = rd[k] & ~BIT(p); mark[k] = mark[k] & ~BIT(p) \
    fi; \
    m = 0

#define SEND(p, k, r) \
    if \
    :: UP(k) -> q[CH(p, k)]!r; if :: r <= ACQ_U -> acqs[CH(p, k)]++ :: else fi \
    :: else \
    fi
#define SEND_ALL(p, r) SEND(p, 0, r); SEND(p, 1, r); SEND(p, 2, r)
/* the clean-up goes to the nodes that did not refuse */
#define SEND_CLEAN(p, k, r) if :: (refused[p] & BIT(k)) == 0 -> SEND(p, k, r) :: else fi
#define CLEAN_UP(p, r) SEND_CLEAN(p, 0, r); SEND_CLEAN(p, 1, r); SEND_CLEAN(p, 2, r)
#define ROOM1(p, k, n) (!UP(k) || len(q[CH(p, k)]) + (n) <= CAP)
#define ROOM(p, n) (ROOM1(p, 0, n) && ROOM1(p, 1, n) && ROOM1(p, 2, n))

#define ATTEMPT(p, r) answered[p] = 0; refused[p] = 0; pstate[p] = COLLECT; SEND_ALL(p, r)
#define DECIDED_NO(p) (GRANTS(p) < Q && IMPOSSIBLE(p))
/* a failed attempt: decided by the answers, or (a fault) timed out while undecided */
#define FAILS(p) (GRANTS(p) < Q && (DECIDED_NO(p) || faults > 0))
#define TIMED_OUT(p) if :: !DECIDED_NO(p) -> faults--; printf("MSC: process %d times out\n", p) :: else fi

/* the writers that wait now, for a reader's attempt that begins */
#define READER_BEGINS(p) ahead[p] = waiting

/* a writer leaves the waiting writers */
#define STOPS_WAITING(p) waiting = waiting & ~BIT(p)

active [NR] proctype Reader()
{
    byte p = _pid;
    atomic { ROOM(p, 1) -> READER_BEGINS(p); ATTEMPT(p, ACQ_R) }
    do
    :: atomic {
        GRANTS(p) >= Q ->
        assert((cs_w & ~BIT(p)) == 0);        /* P1 */
        assert((ahead[p] & waiting) == 0);    /* P2 */
        cs_r = cs_r | BIT(p); pstate[p] = HOLD;
        printf("MSC: reader %d reads\n", p);
        break
    }
    :: atomic {
        FAILS(p) && ROOM(p, 2) -> TIMED_OUT(p);
        CLEAN_UP(p, CLEAN_R); READER_BEGINS(p); ATTEMPT(p, ACQ_R)
    }
    od;
progress_read:
    if
    :: atomic { faults > 0 -> faults--; cs_r = cs_r & ~BIT(p); pstate[p] = DEAD; printf("MSC: reader %d dies\n", p); goto dead }
    :: true
    fi;
#if UPGRADE
    /* the upgrade, tried once (variant 5: until granted) */
    atomic { ROOM(p, 1) -> ATTEMPT(p, ACQ_U) }
    do
    :: atomic {
        GRANTS(p) >= Q ->
        assert(cs_w == 0 && (cs_r & ~BIT(p)) == 0);   /* P1 */
        cs_r = cs_r & ~BIT(p); cs_w = cs_w | BIT(p); pstate[p] = HOLD;
        printf("MSC: reader %d upgraded\n", p);
        break
    }
    :: atomic {
        FAILS(p) && ROOM(p, 2) -> TIMED_OUT(p);
        CLEAN_UP(p, CLEAN_U);
        printf("MSC: reader %d: upgrade refused\n", p);
#if VARIANT == 5
        ATTEMPT(p, ACQ_U)
#else
        pstate[p] = HOLD; break
#endif
    }
    od;
progress_upgraded:
#endif
    atomic {
        ROOM(p, 1) -> cs_r = cs_r & ~BIT(p); cs_w = cs_w & ~BIT(p); pstate[p] = DONE;
        printf("MSC: reader %d releases\n", p);
        SEND_ALL(p, REL)
    };
    goto done;
dead:
#ifdef NP
end_dead:
    do
    :: d_step {
        ((rd[0] | rd[1] | rd[2]) & BIT(p)) != 0 || wkey[0] == p + 1 || wkey[1] == p + 1 || wkey[2] == p + 1 ->
        rd[0] = rd[0] & ~BIT(p); rd[1] = rd[1] & ~BIT(p); rd[2] = rd[2] & ~BIT(p);
        if :: wkey[0] == p + 1 -> wkey[0] = 0 :: else fi;
        if :: wkey[1] == p + 1 -> wkey[1] = 0 :: else fi;
        if :: wkey[2] == p + 1 -> wkey[2] = 0 :: else fi
    }
    od;
#endif
done:
    skip
}

#if NW > 0
active [NW] proctype Writer()
{
    byte p = _pid;
    atomic { ROOM(p, 1) -> ATTEMPT(p, ACQ_W) }
    do
    :: atomic {
        GRANTS(p) >= Q ->
        assert(cs_r == 0 && cs_w == 0);       /* P1 */
        STOPS_WAITING(p);
        cs_w = cs_w | BIT(p); pstate[p] = HOLD;
        if :: p == NR -> since = false :: else -> since = true fi;
        printf("MSC: writer %d writes\n", p);
        break
    }
    :: atomic {
        FAILS(p) && ROOM(p, 2) ->
        if :: DECIDED_NO(p) -> waiting = waiting | BIT(p) :: else -> TIMED_OUT(p) fi;
        CLEAN_UP(p, CLEAN_W);
        if
        :: ATTEMPT(p, ACQ_W)
        :: faults > 0 -> faults--; ATTEMPT(p, ACQ_W); STOPS_WAITING(p); pstate[p] = DEAD;
           printf("MSC: writer %d dies waiting\n", p); goto dead
        :: faults > 0 -> faults--; STOPS_WAITING(p); pstate[p] = DONE;
           printf("MSC: writer %d gives up\n", p); SEND_ALL(p, REL); goto done
        fi
    }
    od;
progress_write:
#if DOWNGRADE
    if
    :: p == NR ->
        /* the downgrade, tried once: the read acquire of its own token (variant 4: release, then ask) */
#if VARIANT == 4
        atomic { ROOM(p, 2) -> cs_w = cs_w & ~BIT(p); SEND_ALL(p, REL); ATTEMPT(p, ACQ_R) }
#else
        atomic { ROOM(p, 1) -> ATTEMPT(p, ACQ_R) }
#endif
        do
        :: atomic {
            GRANTS(p) >= Q ->
            assert((cs_w & ~BIT(p)) == 0);    /* P1 */
            assert(!since);                   /* P4 */
            cs_w = cs_w & ~BIT(p); cs_r = cs_r | BIT(p); pstate[p] = HOLD;
            printf("MSC: writer %d downgraded\n", p);
            break
        }
        :: atomic {
            FAILS(p) && ROOM(p, 1) -> TIMED_OUT(p);
            cs_w = cs_w & ~BIT(p); pstate[p] = DONE;
            printf("MSC: writer %d: downgrade failed, releases everything\n", p);
            SEND_ALL(p, REL); goto done
        }
        od
    :: else
    fi;
#endif
    atomic {
        ROOM(p, 1) -> cs_w = cs_w & ~BIT(p); cs_r = cs_r & ~BIT(p); pstate[p] = DONE;
        printf("MSC: writer %d releases\n", p);
        SEND_ALL(p, REL)
    };
    goto done;
dead:
#ifdef NP
end_dead:
    do
    :: d_step {
#if VARIANT == 3
        ((rd[0] | rd[1] | rd[2]) & BIT(p)) != 0 || wkey[0] == p + 1 || wkey[1] == p + 1 || wkey[2] == p + 1 ->
#else
        ((rd[0] | rd[1] | rd[2] | mark[0] | mark[1] | mark[2]) & BIT(p)) != 0 || wkey[0] == p + 1 ||
        wkey[1] == p + 1 || wkey[2] == p + 1 ->
        mark[0] = mark[0] & ~BIT(p); mark[1] = mark[1] & ~BIT(p); mark[2] = mark[2] & ~BIT(p);
#endif
        rd[0] = rd[0] & ~BIT(p); rd[1] = rd[1] & ~BIT(p); rd[2] = rd[2] & ~BIT(p);
        if :: wkey[0] == p + 1 -> wkey[0] = 0 :: else fi;
        if :: wkey[1] == p + 1 -> wkey[1] = 0 :: else fi;
        if :: wkey[2] == p + 1 -> wkey[2] = 0 :: else fi
    }
    od;
#endif
done:
    skip
}
#endif

/* what a dead process left on node k goes (its TTLs end): the safety search lets it go at any moment */
#if VARIANT == 3
#define MARK_EXPIRES(k, d) false
#else
#define MARK_EXPIRES(k, d) ((mark[k] & BIT(d)) != 0)
#endif
#define EXPIRE(k, d) \
    d_step { \
        pstate[d] == DEAD && ((rd[k] & BIT(d)) != 0 || wkey[k] == (d) + 1 || MARK_EXPIRES(k, d)) -> \
        rd[k] = rd[k] & ~BIT(d); \
        if :: wkey[k] == (d) + 1 -> wkey[k] = 0 :: else fi; \
        if :: MARK_EXPIRES(k, d) -> mark[k] = mark[k] & ~BIT(d) :: else fi \
    }

/* the nodes serve the requests of process p, each connection in order */
#define NODE(p, k) :: d_step { nempty(q[CH(p, k)]) -> SERVE(p, k) }
active [P] proctype Server()
{
    byte p = _pid - P;
end:
    do
    NODE(p, 0)
    NODE(p, 1)
#if DOWN == none
    NODE(p, 2)
#endif
#ifndef NP
    :: EXPIRE(0, p)
    :: EXPIRE(1, p)
    :: EXPIRE(2, p)
#endif
    od
}
