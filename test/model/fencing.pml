/*
 * fencing.pml: a SPIN (Promela) model of redlock-asio's two-phase fencing-token protocol
 * (doc/fencing.md, "The protocol") on N = 3 Redis nodes, quorum Q = N/2 + 1 = 2, 2 clients.
 *
 * WHAT IS MODELLED
 *   Node k holds key[k] (0 = absent, c+1 = client c's unique owner id) and a fence counter F[k]
 *   (starts at 0, never expires, survives restarts). Each node script runs atomically (d_step).
 *   - Phase 1, acquire (sent to all N nodes): if the key is absent or == id, set key = id (grant)
 *     and answer F[k]; else refuse. Once Q granting answers are in, T = 1 + max of them.
 *   - Phase 2, commit(T) (sent to all N nodes): if key == id and F[k] < T then F[k] := T, success;
 *     else failure. T is issued once Q successes are in; otherwise the attempt fails.
 *   - After a failure, or after holding the token, the client releases and may start a new attempt
 *     with the same owner id.
 *   Messages: client c talks to node k over its own FIFO channel q[c*N+k] (one TCP connection:
 *   per-connection order is kept, nodes are independent). A node serves a pending request at any
 *   later time, so requests can arrive after the client gave up or began its next attempt. An
 *   answer counts only for the client's current attempt and phase (stale answers are discarded).
 *   Lost or late answers: the client uses only the answers it chose and gives up (timeout) when it
 *   lacks its quorum. A commit request may be lost. A held key may expire at any moment.
 *
 * MODELLING SHORTCUTS (to keep the state space small; none removes a way to violate P1-P3)
 *   - Answers used: a client picks, when its attempt starts, the pair of nodes whose granting
 *     answers it will use. Using all N answers gives the maximum of some pair, so every choice is
 *     covered. By node symmetry, client 0's first attempt uses nodes 0 and 1.
 *   - Expiry: a key is read only when its node serves a request, and the ghost held[] only grows
 *     stricter when a key lives longer. So an expiry can be postponed to just before the next
 *     acquire of another client on that node: "key expired first" is an option of that step.
 *     (In variant 0 an expiry just before a commit makes it fail, as a lost commit does.)
 *   - Release (delete the key where == id) is an expiry at that moment; a lost release is a later
 *     expiry. A lost acquire is a grant whose answer goes unused and whose key expires later.
 *   - Giving up and releasing happen in one step with the start of the client's next attempt (or
 *     its end): in between, only the client's own bookkeeping differs; its requests in flight are
 *     still served at any later time. Holding longer only makes P3 stricter.
 *   - With a quorum of grants the client commits (giving up instead = all its commits lost); with a
 *     quorum of commit successes the token is issued (giving up instead would check less).
 *
 * BOUNDS
 *   N = 3, Q = 2, client 0 makes 2 attempts and client 1 makes 1 (client 0's second attempt covers
 *   retries with the same owner id and its own late requests). Tokens stay <= 3 (t < 8 is
 *   asserted). Channels hold 4 requests, so sends never block. At most one node restart
 *   (variant 3). Variant 0 is verified exhaustively, safety only (no bitstate): about 12.5 million
 *   states, 2 GB and 10-25 s with gcc -O2.
 *
 * PROPERTIES (assertions at the step where client c is issued token t)
 *   P1 uniqueness:   no token is issued twice (ghost bit set issuedSet).
 *   P2 monotonicity: t > startHi[c], the highest token issued before this attempt started (ghost).
 *   P3 no premature fencing (CHECK_HOLDER, default 1): while the other client Y holds an issued
 *      token T_Y and its key has stayed in place on a quorum of the nodes where its commit
 *      succeeded (ghost bitmask held[Y], a bit is cleared when that key goes), a token issued to
 *      anyone else is lower than T_Y: a holder whose lease is intact is never fenced out.
 *
 * VARIANTS (-DVARIANT=n)
 *   0  the protocol above: P1, P2 and P3 hold ("errors: 0").
 *   1  single-phase design: a grant does F[k] := F[k] + 1 and answers the new F[k]; T = max of
 *      the answers used, no commit. Violates P1 (two clients get the same token).
 *   2  commit without the ownership check (key == id omitted). P1 and P2 still hold: they follow
 *      from the strict F[k] < T check, quorum intersection and F never decreasing (run it with
 *      -DCHECK_HOLDER=0: "errors: 0"). P3 is violated: a client commits its token on a node whose
 *      key now belongs to a holder with an intact lease, and fences that holder out.
 *   3  a node restart loses F[k] (and its key), once, at any moment. Violates P1 and P2.
 *
 * RUN BY HAND
 *   spin -a -DVARIANT=0 fencing.pml && gcc -DSAFETY -O2 -o pan pan.c && ./pan -m10000
 *   "errors: 0" is expected for variant 0, "errors: 1" for 1..3; then
 *   `spin -t -DVARIANT=n fencing.pml | grep MSC` narrates the counterexample (-p for every step).
 *   test/model/run_spin.cmake (the ctest model_fencing_spin) checks all four variants.
 */

#ifndef VARIANT
#define VARIANT 0
#endif
#ifndef CHECK_HOLDER
#define CHECK_HOLDER 1
#endif

#define N 3
#define Q 2
#define NC 2

#define ACQ 1
#define COMMIT 2

/* node state */
byte key[N];        /* 0 = absent, c+1 = held by client c */
byte F[N];          /* fence counters */

/* client -> node connections, FIFO per (client, node): { kind, attempt, token } */
chan q[NC * N] = [4] of { byte, byte, byte };

/* client state the nodes' answers are folded into */
byte catt[NC];      /* current attempt number */
byte cphase[NC];    /* 1 = collecting grants, 2 = collecting commit successes, 3 = holding */
byte pend[NC];      /* phase 1: nodes whose granting answer the client still waits for (bitmask) */
byte mx[NC];        /* phase 1: max F over the answers in */
byte nok[NC];       /* phase 2: commit successes in */

/* ghost variables */
byte maxIssued;     /* highest token issued so far */
byte startHi[NC];   /* maxIssued when the client's current attempt started */
byte holding[NC];   /* token the client holds now, 0 = none */
byte held[NC];      /* nodes where the current attempt's commit succeeded and the key stayed */
byte issuedSet;     /* bit t set once t was issued */
#if VARIANT == 3
bool restarted;
#endif

/* scratch of the node steps, dead after each d_step: kept out of the state vector */
hidden byte kind, matt, mtok;

#define BIT(k) (1 << (k))
#define popcount3(h) (((h) & 1) + (((h) >> 1) & 1) + (((h) >> 2) & 1))

/* the key of node k disappears (expiry, release, restart) */
#define clear_key(k) \
    if \
    :: key[k] != 0 -> \
        printf("MSC: node %d: key of client %d expires\n", k, key[k] - 1); \
        held[key[k] - 1] = held[key[k] - 1] & ~BIT(k); \
        key[k] = 0 \
    :: else \
    fi

#if VARIANT == 2
#define OWNS(c, k) true
#else
#define OWNS(c, k) (key[k] == (c) + 1)
#endif

/* the atomic script for the request (kind, matt, mtok) from client c on node k
 * (the printf lines only narrate a counterexample replayed with spin -t) */
#define SERVE(c, k) \
    if \
    :: kind == ACQ -> \
        if \
        :: key[k] == 0 || key[k] == (c) + 1 -> \
            key[k] = (c) + 1; \
            if :: VARIANT == 1 -> F[k] = F[k] + 1 :: else fi; \
            printf("MSC: node %d: grants client %d (attempt %d), F = %d\n", k, c, matt, F[k]); \
            if \
            :: catt[c] == matt && cphase[c] == 1 && (pend[c] & BIT(k)) -> \
                pend[c] = pend[c] & ~BIT(k); \
                if :: F[k] > mx[c] -> mx[c] = F[k] :: else fi \
            :: else \
            fi \
        :: else -> \
            printf("MSC: node %d: refuses client %d (attempt %d)\n", k, c, matt) \
        fi \
    :: kind == COMMIT -> \
        if \
        :: OWNS(c, k) && F[k] < mtok -> \
            printf("MSC: node %d: commit T = %d of client %d (attempt %d) succeeds (key holder: %d)\n", \
                   k, mtok, c, matt, key[k] - 1); \
            F[k] = mtok; \
            if :: catt[c] == matt && cphase[c] >= 2 && key[k] == (c) + 1 -> held[c] = held[c] | BIT(k) :: else fi; \
            if :: catt[c] == matt && cphase[c] == 2 && nok[c] < Q -> nok[c]++ :: else fi \
        :: else -> \
            printf("MSC: node %d: commit T = %d of client %d (attempt %d) fails\n", k, mtok, c, matt) \
        fi \
    fi; \
    kind = 0; matt = 0; mtok = 0

#define NODE_STEP(c, k) \
    :: d_step { q[(c) * N + (k)]?kind, matt, mtok -> SERVE(c, k) } \
    :: d_step { q[(c) * N + (k)]?[ACQ, _, _] && key[k] != 0 && key[k] != (c) + 1 -> \
                q[(c) * N + (k)]?kind, matt, mtok; clear_key(k); SERVE(c, k) }   /* key expired first */ \
    :: d_step { q[(c) * N + (k)]?[COMMIT, _, _] -> q[(c) * N + (k)]?_, _, _; \
                printf("MSC: node %d: commit of client %d lost\n", k, c) }   /* commit lost */

#if VARIANT == 3
#define RESTART(k) \
    :: d_step { !restarted -> \
                restarted = true; \
                printf("MSC: node %d restarts: F = 0, key lost\n", k); \
                F[k] = 0; \
                if :: key[k] != 0 -> held[key[k] - 1] = held[key[k] - 1] & ~BIT(k); key[k] = 0 :: else fi }
#else
#define RESTART(k)
#endif

active proctype Nodes()
{
end:
    do
    NODE_STEP(0, 0)
    NODE_STEP(0, 1)
    NODE_STEP(0, 2)
    NODE_STEP(1, 0)
    NODE_STEP(1, 1)
    NODE_STEP(1, 2)
    RESTART(0)
    RESTART(1)
    RESTART(2)
    od
}

#define SEND_ALL(c, kd, a, tk) \
    q[(c) * N + 0]!kd, a, tk; q[(c) * N + 1]!kd, a, tk; q[(c) * N + 2]!kd, a, tk

proctype Client(byte c; byte attempts)
{
    byte att, t;

start:
    /* The previous attempt (if any) ends here: a failed one is given up, an issued token is
     * released. Then the next attempt starts and sends its acquire requests. */
    atomic {
        holding[c] = 0;
        held[c] = 0;
        t = 0;
        pend[c] = 0;
        mx[c] = 0;
        nok[c] = 0;
        cphase[c] = 0;
        startHi[c] = 0;
        if
        :: att == attempts -> catt[c] = 0; goto done
        :: else
        fi;
        att++;
        catt[c] = att;
        cphase[c] = 1;
        startHi[c] = maxIssued;
        /* the pair of nodes whose granting answers this attempt uses */
        if
        :: pend[c] = BIT(0) | BIT(1)
        :: c != 0 || att != 1 -> pend[c] = BIT(0) | BIT(2)
        :: c != 0 || att != 1 -> pend[c] = BIT(1) | BIT(2)
        fi;
        printf("MSC: client %d: attempt %d starts (highest token issued so far: %d), uses nodes %d and %d\n",
               c, att, startHi[c], (pend[c] & 1 -> 0 : 1), (pend[c] & 4 -> 2 : 1));
        SEND_ALL(c, ACQ, att, 0)
    }
    /* phase 1: both answers are in, or the client gives up */
    atomic {
        if
        :: pend[c] == 0
        :: pend[c] != 0 -> printf("MSC: client %d: gives up\n", c); goto start
        fi;
#if VARIANT == 1
        t = mx[c];                  /* T = the largest incremented counter, issued at once */
        mx[c] = 0;
        goto issue
#else
        t = mx[c] + 1;              /* T = 1 + max F */
        mx[c] = 0;
        cphase[c] = 2;
        printf("MSC: client %d: commits T = %d\n", c, t);
        SEND_ALL(c, COMMIT, att, t)
#endif
    }
    /* phase 2: a quorum of successes is in, or the client gives up */
    atomic {
        if
        :: nok[c] >= Q
        :: nok[c] < Q -> printf("MSC: client %d: commit quorum missed, gives up\n", c); goto start
        fi;
        nok[c] = 0;
issue:
        printf("MSC: client %d: token %d issued\n", c, t);
        cphase[c] = 3;
        assert(t < 8);
        assert((issuedSet & BIT(t)) == 0);      /* P1 uniqueness */
        issuedSet = issuedSet | BIT(t);
        assert(t > startHi[c]);                 /* P2 monotonicity */
#if CHECK_HOLDER
        /* P3: the other client, if its lease is intact, keeps the highest token */
        assert(holding[1 - c] == 0 || popcount3(held[1 - c]) < Q || t < holding[1 - c]);
#endif
        holding[c] = t;
        if :: t > maxIssued -> maxIssued = t :: else fi;
        goto start                  /* holds the lock (others interleave) until its next step */
    }
done:
    skip
}

init
{
    atomic {
        run Client(0, 2);
        run Client(1, 1)
    }
}
