/*
 * mpi_coll: times MPI collectives the way nccl-tests times NCCL, so jccl's `jccl perf`
 * numbers can be put next to Open MPI's (see ../README.md).
 *
 *   mpirun -np 2 ./mpi_coll allreduce,allgather -b 8 -e 64M -f 2 --json mpi.json
 *
 * Sizes follow nccl-tests: -b/-e are bytes; for allgather, reducescatter, alltoall,
 * gather and scatter the size is the total over all ranks (count x nranks x type size) and
 * the count column is the per-rank count. algbw = size / time; busbw = algbw x the
 * nccl-tests factor (allreduce 2(n-1)/n; allgather, reducescatter, alltoall, gather,
 * scatter (n-1)/n; broadcast, reduce, sendrecv 1). The time of a size is the maximum over
 * ranks of each rank's mean time per iteration; the timed loop has no barrier inside
 * (one barrier before it), so skew between ranks is part of the time, as in nccl-tests.
 *
 * Iterations adapt to the size (about -T seconds of timed loop per size, 0.2 s by default)
 * unless -n fixes them. The check (-c 1, default) runs one more operation per size after
 * the timing, on integer-valued data whose result is exact in every type, and counts the
 * wrong elements summed over ranks.
 */
#include <mpi.h>

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum coll { ALLREDUCE, ALLGATHER, REDUCESCATTER, BROADCAST, REDUCE, ALLTOALL, GATHER, SCATTER,
            SENDRECV, NCOLL };
static const char *COLL_NAMES[NCOLL] = {"allreduce", "allgather", "reducescatter", "broadcast",
                                        "reduce", "alltoall", "gather", "scatter", "sendrecv"};

enum dtype { T_INT8, T_UINT8, T_INT32, T_UINT32, T_INT64, T_UINT64, T_FLOAT, T_DOUBLE, NTYPE };
/* Names as jccl's DataType.shortName() and nccl-tests print them. */
static const char *TYPE_NAMES[NTYPE] = {"int8", "uint8", "int32", "uint32",
                                        "int64", "uint64", "float", "double"};
static const size_t TYPE_SIZES[NTYPE] = {1, 1, 4, 4, 8, 8, 4, 8};

enum redop { O_SUM, O_PROD, O_MIN, O_MAX, NOP };
static const char *OP_NAMES[NOP] = {"sum", "prod", "min", "max"};

struct config {
    int colls[NCOLL];
    int ncolls;
    size_t min_bytes, max_bytes, increment;
    double factor;
    int iters;          /* 0 = adaptive */
    int warmup;
    double target_s;    /* timed seconds per size when adaptive */
    enum dtype type;
    enum redop op;
    int root;
    int check;
    int blocking;       /* 1: MPI_Barrier after each timed operation (jccl perf -z 1 has none since: default 0 matches it) */
    const char *json;
    const char *label;
    const char *machine;
};

/* What one size means for one collective (nccl-tests' getCollByteCount). */
struct shape {
    size_t count;      /* the count column: elements per rank argument of the call */
    size_t send_elems; /* elements read from the send buffer */
    size_t recv_elems; /* elements written to the receive buffer */
    size_t bytes;      /* the size column: max(send, recv) bytes */
};

struct result {
    double time_us, algbw, busbw;
    long wrong; /* -1 when not checked */
};

static int g_rank, g_nranks;

static void die(const char *msg) {
    if (g_rank == 0) fprintf(stderr, "mpi_coll: %s\n", msg);
    MPI_Abort(MPI_COMM_WORLD, 2);
    exit(2);
}

static void usage_exit(const char *msg) {
    if (g_rank == 0) {
        if (msg) fprintf(stderr, "mpi_coll: %s\n", msg);
        fprintf(stderr,
                "usage: mpi_coll [COLL[,COLL...]|all] [-b min] [-e max] [-f factor | -i increment]\n"
                "                [-n iters (0 = adaptive)] [-w warmup] [-T seconds per size]\n"
                "                [-d int8|uint8|int32|uint32|int64|uint64|float|double]\n"
                "                [-o sum|prod|min|max] [-r root] [-c 0|1] [-z 0|1]\n"
                "                [--json FILE] [--label TEXT] [--machine TEXT]\n"
                "  COLL: allreduce allgather reducescatter broadcast reduce alltoall gather scatter sendrecv\n"
                "  sizes take K, M, G suffixes (powers of 1024), as nccl-tests\n"
                "  -z 1: an MPI_Barrier after each timed operation (latency plus a barrier); the default 0 times\n        back-to-back calls, like `jccl perf -z 1`\n");
    }
    MPI_Finalize();
    exit(msg ? 2 : 0);
}

static size_t parse_size(const char *flag, const char *s) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || v < 0) goto bad;
    double mul = 1;
    switch (*end) {
        case 'K': case 'k': mul = 1024.0; end++; break;
        case 'M': case 'm': mul = 1024.0 * 1024; end++; break;
        case 'G': case 'g': mul = 1024.0 * 1024 * 1024; end++; break;
        default: break;
    }
    if (*end != '\0') goto bad;
    return (size_t)(v * mul);
bad:;
    char msg[256];
    snprintf(msg, sizeof msg, "%s: '%s' is not a size; use bytes with an optional K, M or G suffix", flag, s);
    usage_exit(msg);
    return 0;
}

static long parse_long(const char *flag, const char *s, long lo, long hi) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end != '\0' || v < lo || v > hi) {
        char msg[256];
        snprintf(msg, sizeof msg, "%s: '%s' is not an integer in [%ld, %ld]", flag, s, lo, hi);
        usage_exit(msg);
    }
    return v;
}

static int lookup(const char *flag, const char *s, const char **names, int n) {
    for (int i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0) return i;
    char msg[512];
    int off = snprintf(msg, sizeof msg, "%s: unknown value '%s'; use one of", flag, s);
    for (int i = 0; i < n && off < (int)sizeof msg; i++)
        off += snprintf(msg + off, sizeof msg - off, " %s", names[i]);
    usage_exit(msg);
    return -1;
}

static void parse_colls(struct config *c, const char *arg) {
    if (strcmp(arg, "all") == 0) {
        for (int i = 0; i < NCOLL; i++) c->colls[i] = i;
        c->ncolls = NCOLL;
        return;
    }
    char *copy = strdup(arg);
    for (char *tok = strtok(copy, ","); tok; tok = strtok(NULL, ",")) {
        if (c->ncolls == NCOLL) usage_exit("too many collectives");
        c->colls[c->ncolls++] = lookup("collective", tok, COLL_NAMES, NCOLL);
    }
    free(copy);
    if (c->ncolls == 0) usage_exit("collective: name at least one");
}

static void parse_args(struct config *c, int argc, char **argv) {
    *c = (struct config){.min_bytes = 8, .max_bytes = 64u << 20, .factor = 2, .warmup = 5,
                         .target_s = 0.2, .type = T_FLOAT, .op = O_SUM, .check = 1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) usage_exit(NULL);
        if (a[0] != '-') { parse_colls(c, a); continue; }
        if (i + 1 >= argc) {
            char msg[128];
            snprintf(msg, sizeof msg, "%s needs a value", a);
            usage_exit(msg);
        }
        const char *v = argv[++i];
        if (!strcmp(a, "-b")) c->min_bytes = parse_size(a, v);
        else if (!strcmp(a, "-e")) c->max_bytes = parse_size(a, v);
        else if (!strcmp(a, "-f")) {
            c->factor = strtod(v, NULL);
            if (!(c->factor > 1)) usage_exit("-f: the factor must be a number > 1");
        } else if (!strcmp(a, "-i")) c->increment = parse_size(a, v);
        else if (!strcmp(a, "-n")) c->iters = (int)parse_long(a, v, 0, 100000000);
        else if (!strcmp(a, "-w")) c->warmup = (int)parse_long(a, v, 0, 100000);
        else if (!strcmp(a, "-T")) {
            c->target_s = strtod(v, NULL);
            if (!(c->target_s > 0 && c->target_s <= 60)) usage_exit("-T: seconds per size must be in (0, 60]");
        } else if (!strcmp(a, "-d")) c->type = lookup(a, v, TYPE_NAMES, NTYPE);
        else if (!strcmp(a, "-o")) c->op = lookup(a, v, OP_NAMES, NOP);
        else if (!strcmp(a, "-r")) c->root = (int)parse_long(a, v, 0, 1 << 30);
        else if (!strcmp(a, "-c")) c->check = (int)parse_long(a, v, 0, 1);
        else if (!strcmp(a, "-z")) c->blocking = (int)parse_long(a, v, 0, 1);
        else if (!strcmp(a, "--json")) c->json = v;
        else if (!strcmp(a, "--label")) c->label = v;
        else if (!strcmp(a, "--machine")) c->machine = v;
        else {
            char msg[128];
            snprintf(msg, sizeof msg, "unknown flag %s", a);
            usage_exit(msg);
        }
    }
    if (c->ncolls == 0) { c->colls[0] = ALLREDUCE; c->ncolls = 1; }
    if (c->min_bytes == 0) usage_exit("-b: the minimum size must be > 0");
    if (c->max_bytes < c->min_bytes) usage_exit("-e: the maximum size must be >= -b");
    if (c->root >= g_nranks) {
        char msg[128];
        snprintf(msg, sizeof msg, "-r: root %d is not a rank of this job of %d ranks", c->root, g_nranks);
        usage_exit(msg);
    }
}

static struct shape shape_of(enum coll coll, size_t bytes, size_t ts, int n) {
    size_t count = bytes / ts, per = count / n;
    struct shape s;
    switch (coll) {
        case ALLGATHER: case GATHER: s = (struct shape){per, per, per * n, 0}; break;
        case REDUCESCATTER: case SCATTER: s = (struct shape){per, per * n, per, 0}; break;
        case ALLTOALL: s = (struct shape){per, per * n, per * n, 0}; break;
        default: s = (struct shape){count, count, count, 0}; break;
    }
    s.bytes = (s.send_elems > s.recv_elems ? s.send_elems : s.recv_elems) * ts;
    return s;
}

static double bus_factor(enum coll coll, int n) {
    switch (coll) {
        case ALLREDUCE: return 2.0 * (n - 1) / n;
        case ALLGATHER: case REDUCESCATTER: case ALLTOALL: case GATHER: case SCATTER:
            return (double)(n - 1) / n;
        default: return 1.0;
    }
}

static MPI_Datatype mpi_type(enum dtype t) {
    static MPI_Datatype map[NTYPE];
    map[T_INT8] = MPI_INT8_T; map[T_UINT8] = MPI_UINT8_T;
    map[T_INT32] = MPI_INT32_T; map[T_UINT32] = MPI_UINT32_T;
    map[T_INT64] = MPI_INT64_T; map[T_UINT64] = MPI_UINT64_T;
    map[T_FLOAT] = MPI_FLOAT; map[T_DOUBLE] = MPI_DOUBLE;
    return map[t];
}

static MPI_Op mpi_op(enum redop o) {
    switch (o) {
        case O_SUM: return MPI_SUM;
        case O_PROD: return MPI_PROD;
        case O_MIN: return MPI_MIN;
        default: return MPI_MAX;
    }
}

/* One operation; nccl-tests' in-place layout: the rank's own block inside the receive buffer. */
static void run_once(const struct config *c, enum coll coll, const struct shape *s, int inplace,
                     char *sendb, char *recvb) {
    MPI_Datatype dt = mpi_type(c->type);
    MPI_Op op = mpi_op(c->op);
    MPI_Comm w = MPI_COMM_WORLD;
    int cnt = (int)s->count, me = g_rank, n = g_nranks, root = c->root;
    size_t blk = s->count * TYPE_SIZES[c->type];
    switch (coll) {
        case ALLREDUCE:
            MPI_Allreduce(inplace ? MPI_IN_PLACE : sendb, recvb, cnt, dt, op, w);
            break;
        case ALLGATHER:
            if (inplace) MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recvb, cnt, dt, w);
            else MPI_Allgather(sendb, cnt, dt, recvb, cnt, dt, w);
            break;
        case REDUCESCATTER: /* in place: input is the whole receive buffer, result its first block */
            MPI_Reduce_scatter_block(inplace ? MPI_IN_PLACE : sendb, recvb, cnt, dt, op, w);
            break;
        case BROADCAST: /* MPI_Bcast has one buffer: out of place, the root sends from its send buffer */
            MPI_Bcast(!inplace && me == root ? sendb : recvb, cnt, dt, root, w);
            break;
        case REDUCE:
            if (inplace) MPI_Reduce(me == root ? MPI_IN_PLACE : recvb, recvb, cnt, dt, op, root, w);
            else MPI_Reduce(sendb, recvb, cnt, dt, op, root, w);
            break;
        case ALLTOALL:
            if (inplace) MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recvb, cnt, dt, w);
            else MPI_Alltoall(sendb, cnt, dt, recvb, cnt, dt, w);
            break;
        case GATHER:
            if (!inplace) MPI_Gather(sendb, cnt, dt, recvb, cnt, dt, root, w);
            else if (me == root) MPI_Gather(MPI_IN_PLACE, cnt, dt, recvb, cnt, dt, root, w);
            else MPI_Gather(recvb + (size_t)me * blk, cnt, dt, NULL, cnt, dt, root, w);
            break;
        case SCATTER:
            if (!inplace) MPI_Scatter(sendb, cnt, dt, recvb, cnt, dt, root, w);
            else if (me == root) MPI_Scatter(recvb, cnt, dt, MPI_IN_PLACE, cnt, dt, root, w);
            else MPI_Scatter(NULL, cnt, dt, recvb + (size_t)me * blk, cnt, dt, root, w);
            break;
        case SENDRECV: { /* a ring: send to the next rank, receive from the previous one */
            int next = (me + 1) % n, prev = (me + n - 1) % n;
            if (inplace) MPI_Sendrecv_replace(recvb, cnt, dt, next, 7, prev, 7, w, MPI_STATUS_IGNORE);
            else MPI_Sendrecv(sendb, cnt, dt, next, 7, recvb, cnt, dt, prev, 7, w, MPI_STATUS_IGNORE);
            break;
        }
        default: break;
    }
}

/* ---- correctness check: integer-valued data, exact in every type ---- */

/* The input element i of rank r. Values 1..3 (1..2 for prod) keep sums and products exact. */
static int64_t input_value(const struct config *c, int r, size_t i) {
    return c->op == O_PROD ? (int64_t)((r + i) % 2) + 1 : (int64_t)((r + i) % 3) + 1;
}

/* Stores v converted to the buffer's type, wrapping integers as the hardware does. */
static void put(enum dtype t, char *b, size_t i, int64_t v) {
    switch (t) {
        case T_INT8: ((int8_t *)b)[i] = (int8_t)v; break;
        case T_UINT8: ((uint8_t *)b)[i] = (uint8_t)v; break;
        case T_INT32: ((int32_t *)b)[i] = (int32_t)v; break;
        case T_UINT32: ((uint32_t *)b)[i] = (uint32_t)v; break;
        case T_INT64: ((int64_t *)b)[i] = v; break;
        case T_UINT64: ((uint64_t *)b)[i] = (uint64_t)v; break;
        case T_FLOAT: ((float *)b)[i] = (float)v; break;
        default: ((double *)b)[i] = (double)v; break;
    }
}

/* Compares element i with v converted to the type: equality after the same conversion. */
static int equals(enum dtype t, const char *b, size_t i, int64_t v) {
    switch (t) {
        case T_INT8: return ((const int8_t *)b)[i] == (int8_t)v;
        case T_UINT8: return ((const uint8_t *)b)[i] == (uint8_t)v;
        case T_INT32: return ((const int32_t *)b)[i] == (int32_t)v;
        case T_UINT32: return ((const uint32_t *)b)[i] == (uint32_t)v;
        case T_INT64: return ((const int64_t *)b)[i] == v;
        case T_UINT64: return ((const uint64_t *)b)[i] == (uint64_t)v;
        case T_FLOAT: return ((const float *)b)[i] == (float)v;
        default: return ((const double *)b)[i] == (double)v;
    }
}

/* The reduction over all ranks of input element i, computed in 64-bit integers (exact for
 * the value ranges used; narrow integer types wrap identically after conversion). */
static int64_t reduced(const struct config *c, size_t i) {
    int64_t acc = input_value(c, 0, i);
    for (int r = 1; r < g_nranks; r++) {
        int64_t v = input_value(c, r, i);
        switch (c->op) {
            case O_SUM: acc += v; break;
            case O_PROD: acc *= v; break;
            case O_MIN: acc = v < acc ? v : acc; break;
            default: acc = v > acc ? v : acc; break;
        }
    }
    return acc;
}

static void fill_for_check(const struct config *c, enum coll coll, const struct shape *s, int inplace,
                           char *sendb, char *recvb) {
    enum dtype t = c->type;
    int me = g_rank;
    size_t cnt = s->count;
    size_t used = s->send_elems > s->recv_elems ? s->send_elems : s->recv_elems;
    for (size_t i = 0; i < used; i++) put(t, recvb, i, 0); /* poison: no expected value is 0 */
    /* The input lies in the send buffer, or in place where nccl-tests puts it. */
    char *in = inplace ? recvb : sendb;
    size_t off = 0;
    if (inplace && (coll == ALLGATHER || coll == GATHER)) off = (size_t)me * cnt;
    if (coll == BROADCAST && me != c->root) return;
    if (coll == SCATTER && me != c->root) {
        /* non-root in-place scatter receives into its own block; no input */
        return;
    }
    for (size_t i = 0; i < s->send_elems; i++) put(t, in, off + i, input_value(c, me, i));
}

static long verify(const struct config *c, enum coll coll, const struct shape *s, int inplace,
                   const char *recvb) {
    enum dtype t = c->type;
    int me = g_rank, n = g_nranks, root = c->root;
    size_t cnt = s->count;
    long wrong = 0;
    switch (coll) {
        case ALLREDUCE:
            for (size_t i = 0; i < cnt; i++) wrong += !equals(t, recvb, i, reduced(c, i));
            break;
        case REDUCE:
            if (me == root)
                for (size_t i = 0; i < cnt; i++) wrong += !equals(t, recvb, i, reduced(c, i));
            break;
        case REDUCESCATTER:
            for (size_t i = 0; i < cnt; i++) wrong += !equals(t, recvb, i, reduced(c, (size_t)me * cnt + i));
            break;
        case ALLGATHER:
            for (int k = 0; k < n; k++)
                for (size_t i = 0; i < cnt; i++)
                    wrong += !equals(t, recvb, (size_t)k * cnt + i, input_value(c, k, i));
            break;
        case GATHER:
            if (me == root)
                for (int k = 0; k < n; k++)
                    for (size_t i = 0; i < cnt; i++)
                        wrong += !equals(t, recvb, (size_t)k * cnt + i, input_value(c, k, i));
            break;
        case BROADCAST:
            if (!(me == root && !inplace)) /* out of place the root's data stays in its send buffer */
                for (size_t i = 0; i < cnt; i++) wrong += !equals(t, recvb, i, input_value(c, root, i));
            break;
        case SCATTER: {
            size_t off = inplace ? (size_t)me * cnt : 0;
            for (size_t i = 0; i < cnt; i++)
                wrong += !equals(t, recvb, off + i, input_value(c, root, (size_t)me * cnt + i));
            break;
        }
        case ALLTOALL: /* block k came from rank k: its elements destined to me */
            for (int k = 0; k < n; k++)
                for (size_t i = 0; i < cnt; i++)
                    wrong += !equals(t, recvb, (size_t)k * cnt + i, input_value(c, k, (size_t)me * cnt + i));
            break;
        case SENDRECV: {
            int prev = (me + n - 1) % n;
            for (size_t i = 0; i < cnt; i++) wrong += !equals(t, recvb, i, input_value(c, prev, i));
            break;
        }
        default: break;
    }
    return wrong;
}

/* ---- timing ---- */

static double max_over_ranks(double v) {
    double m;
    MPI_Allreduce(&v, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return m;
}

/* Mean seconds per operation of `iters` back-to-back operations, the max over ranks. */
static double timed_loop(const struct config *c, enum coll coll, const struct shape *s, int inplace,
                         char *sendb, char *recvb, int iters) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int k = 0; k < iters; k++) {
        run_once(c, coll, s, inplace, sendb, recvb);
        if (c->blocking) MPI_Barrier(MPI_COMM_WORLD);
    }
    double mean = (MPI_Wtime() - t0) / iters;
    return max_over_ranks(mean);
}

static struct result measure(const struct config *c, enum coll coll, const struct shape *s, int inplace,
                             char *sendb, char *recvb) {
    /* A cold operation first, to size the warm-up and the timed loop to the target time. */
    double est = timed_loop(c, coll, s, inplace, sendb, recvb, 1);
    /* At least one warm-up: the cold operation may include connection set-up and page faults,
     * so it would under-size the loop. */
    int warm = c->warmup;
    if (warm > 0 && est * warm > c->target_s / 4) warm = (int)(c->target_s / 4 / est);
    if (c->warmup > 0 && warm < 1) warm = 1;
    if (warm > 0) est = timed_loop(c, coll, s, inplace, sendb, recvb, warm);
    int iters = c->iters;
    if (iters == 0) {
        double want = c->target_s / (est > 1e-9 ? est : 1e-9);
        iters = want < 3 ? 3 : want > 50000 ? 50000 : (int)want;
    }
    double sec = timed_loop(c, coll, s, inplace, sendb, recvb, iters);
    struct result r;
    r.time_us = sec * 1e6;
    /* nccl-tests: algbw uses count x nranks for the per-rank-count collectives. */
    double base_bytes = (double)s->count * TYPE_SIZES[c->type];
    if (coll == ALLGATHER || coll == REDUCESCATTER || coll == ALLTOALL || coll == GATHER || coll == SCATTER)
        base_bytes *= g_nranks;
    r.algbw = sec > 0 ? base_bytes / 1e9 / sec : 0;
    r.busbw = r.algbw * bus_factor(coll, g_nranks);
    r.wrong = -1;
    if (c->check) {
        fill_for_check(c, coll, s, inplace, sendb, recvb);
        MPI_Barrier(MPI_COMM_WORLD);
        run_once(c, coll, s, inplace, sendb, recvb);
        long w = verify(c, coll, s, inplace, recvb), total = 0;
        MPI_Allreduce(&w, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        r.wrong = total;
    }
    return r;
}

/* ---- output ---- */

static void json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20) fprintf(f, "\\u%04x", *s);
        else fputc(*s, f);
    }
    fputc('"', f);
}

static void json_result(FILE *f, const struct result *r) {
    fprintf(f, "{\"time_us\":%.3f,\"algbw\":%.6f,\"busbw\":%.6f,\"wrong\":", r->time_us, r->algbw, r->busbw);
    if (r->wrong < 0) fputs("null}", f);
    else fprintf(f, "%ld}", r->wrong);
}

static void default_machine(char *buf, size_t cap) {
    char host[256] = "?", model[256] = "unknown CPU";
    gethostname(host, sizeof host);
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[512];
        while (fgets(line, sizeof line, f)) {
            if (strncmp(line, "model name", 10) == 0) {
                char *p = strchr(line, ':');
                if (p) {
                    p++;
                    while (*p == ' ') p++;
                    p[strcspn(p, "\n")] = 0;
                    snprintf(model, sizeof model, "%s", p);
                }
                break;
            }
        }
        fclose(f);
    }
    snprintf(buf, cap, "%s, %ld cores (%s)", model, sysconf(_SC_NPROCESSORS_ONLN), host);
}

static void root_name(char *buf, size_t cap, enum coll coll, int root) {
    if (coll == BROADCAST || coll == REDUCE || coll == GATHER || coll == SCATTER) snprintf(buf, cap, "%d", root);
    else snprintf(buf, cap, "%d", -1);
}

static int has_op(enum coll coll) { return coll == ALLREDUCE || coll == REDUCE || coll == REDUCESCATTER; }

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_nranks);
    struct config c;
    parse_args(&c, argc, argv);

    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int vlen;
    MPI_Get_library_version(version, &vlen);
    version[strcspn(version, ",\n")] = 0; /* "Open MPI v4.1.4" */
    char label[300], machine[600];
    snprintf(label, sizeof label, "%s", c.label ? c.label : version);
    if (c.machine) snprintf(machine, sizeof machine, "%s", c.machine);
    else default_machine(machine, sizeof machine);

    size_t ts = TYPE_SIZES[c.type];
    size_t cap = c.max_bytes / ts + (size_t)g_nranks; /* elements; every shape fits */
    char *sendb = malloc(cap * ts), *recvb = malloc(cap * ts);
    if (!sendb || !recvb) die("cannot allocate the buffers; lower -e");
    memset(sendb, 0, cap * ts); /* touch every page before timing */
    memset(recvb, 0, cap * ts);

    FILE *json = NULL;
    if (g_rank == 0) {
        printf("# mpi_coll: %s, %d ranks, %s\n", version, g_nranks, machine);
        printf("# iterations: %s, warm-up %d, check %d; time = max over ranks of the per-rank mean\n",
               c.iters ? "fixed" : "adaptive", c.warmup, c.check);
        if (c.json) {
            json = fopen(c.json, "w");
            if (!json) {
                fprintf(stderr, "mpi_coll: --json: cannot write %s: %s\n", c.json, strerror(errno));
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
            /* docs/PERF_FORMAT.md: machine fields once per run; jccl's versions are empty here. */
            char host[256] = "?";
            gethostname(host, sizeof host);
            host[sizeof host - 1] = 0;
            fputs("{\"format\":\"jccl-perf-1\",\"runs\":[{\"label\":", json);
            json_string(json, label);
            fputs(",\"machine\":", json);
            json_string(json, machine);
            fputs(",\"hostname\":", json);
            json_string(json, host);
            fprintf(json, ",\"cores\":%ld,\"backend\":\"mpi\",\"ranks\":%d,\"jccl_version\":\"\",\"jdk\":\"\",\"rows\":[",
                    sysconf(_SC_NPROCESSORS_ONLN), g_nranks);
        }
    }
    int first_row = 1;
    long total_wrong = 0;
    double bw_sum = 0;
    int bw_n = 0;
    for (int ci = 0; ci < c.ncolls; ci++) {
        enum coll coll = c.colls[ci];
        if (g_rank == 0) {
            printf("#\n# %s\n", COLL_NAMES[coll]);
            printf("#                                                        out-of-place                        in-place\n");
            printf("#       size         count      type   redop    root     time    algbw    busbw  #wrong     time    algbw    busbw  #wrong\n");
            printf("#        (B)    (elements)                               (us)   (GB/s)   (GB/s)              (us)   (GB/s)   (GB/s)\n");
        }
        for (size_t bytes = c.min_bytes; bytes <= c.max_bytes;) {
            struct shape s = shape_of(coll, bytes, ts, g_nranks);
            if (s.count > 0 && s.count <= (size_t)INT32_MAX) {
                struct result oop = measure(&c, coll, &s, 0, sendb, recvb);
                struct result ip = measure(&c, coll, &s, 1, sendb, recvb);
                if (g_rank == 0) {
                    char root[16], w1[24], w2[24];
                    root_name(root, sizeof root, coll, c.root);
                    snprintf(w1, sizeof w1, oop.wrong < 0 ? "N/A" : "%ld", oop.wrong);
                    snprintf(w2, sizeof w2, ip.wrong < 0 ? "N/A" : "%ld", ip.wrong);
                    const char *opn = has_op(coll) ? OP_NAMES[c.op] : "none";
                    printf("%12zu  %12zu  %8s  %6s  %6s  %7.2f  %7.3f  %7.3f  %6s  %7.2f  %7.3f  %7.3f  %6s\n",
                           s.bytes, s.count, TYPE_NAMES[c.type], opn, root, oop.time_us, oop.algbw,
                           oop.busbw, w1, ip.time_us, ip.algbw, ip.busbw, w2);
                    fflush(stdout);
                    if (json) {
                        fprintf(json, "%s\n{\"collective\":\"%s\",\"dtype\":\"%s\",\"op\":\"%s\",\"root\":%s,"
                                      "\"bytes\":%zu,\"count\":%zu,\"oop\":",
                                first_row ? "" : ",", COLL_NAMES[coll], TYPE_NAMES[c.type], opn, root,
                                s.bytes, s.count);
                        json_result(json, &oop);
                        fputs(",\"ip\":", json);
                        json_result(json, &ip);
                        fputs("}", json);
                        first_row = 0;
                    }
                }
                total_wrong += (oop.wrong > 0 ? oop.wrong : 0) + (ip.wrong > 0 ? ip.wrong : 0);
                bw_sum += oop.busbw + ip.busbw;
                bw_n += 2;
            }
            size_t next = c.increment ? bytes + c.increment : (size_t)((double)bytes * c.factor);
            if (next <= bytes) break;
            bytes = next;
        }
    }
    if (g_rank == 0) {
        printf("# Out of bounds values : %ld %s\n", total_wrong, total_wrong ? "FAILED" : "OK");
        printf("# Avg bus bandwidth    : %g\n", bw_n ? bw_sum / bw_n : 0.0);
        if (json) {
            fputs("\n]}]}\n", json);
            fclose(json);
        }
    }
    free(sendb);
    free(recvb);
    MPI_Finalize();
    return total_wrong ? 1 : 0;
}
