// jccl's own all-reduce for small messages over NVLink (org.jccl.cuda.CustomAllReduce).
//
// Built by gen-custom-allreduce.sh into custom_allreduce.fatbin (sm_80 + sm_90 SASS, compute_90 PTX), which is
// checked in beside the SHA-256 of this file; CustomAllReduceSourceTest fails when the two drift apart.
// Do not edit the fatbin by hand: edit this file and run jccl-cuda/src/main/cuda/gen-custom-allreduce.sh.
//
// Design (facts from vLLM's custom_all_reduce.cuh and TensorRT-LLM's customAllReduceKernels.cu; code is ours):
// every rank owns one device buffer that every other rank maps (CUDA IPC across processes, peer access in one
// process). Layout of that buffer:
//   [PEERS_OFF, +64)   this rank's view of every rank's buffer (char* [MAX_RANKS]), written once at set-up
//   [CTL_OFF,   +8)    epoch (calls so far) and done (blocks of the current call that finished); this rank only
//   [FLAGS_OFF, ...)   flags[block][peer] (MAX_BLOCKS x MAX_RANKS): the last barrier value peer's block `block` reached; written by peers
//   [DATA_OFF, ...)    two data slots of slotBytes each; call e uses slot e & 1
//   [LL_OFF, ...)      LL areas (LL_OFF = DATA_OFF + 2 * slotBytes): [parity][sender] of LL_SLOT bytes each, written by
//                      the sender; call e uses parity e & 1
//   [LP_OFF, ...)      Lamport areas (LP_OFF = LL_OFF + 2 * MAX_RANKS * LL_SLOT): [parity][sender] of LAMPORT_SLOT bytes
//                      each, written by the sender; 0xFF bytes where empty; call e uses parity e & 1
//   [AG_OFF, ...)      two-shot Lamport's gather areas (AG_OFF = LP_OFF + 2 * MAX_RANKS * LAMPORT_SLOT): [parity] of
//                      LAMPORT_SLOT bytes, each line written by the rank that owns it; 0xFF bytes where empty
//
// A call copies its input into its own slot, meets the other ranks at a flag barrier, and reads the others' slots:
//   one-shot: every rank reduces every element from every rank's slot (one barrier);
//   two-shot: rank r reduces partition r into its own slot (reduce-scatter), a second barrier, then every rank
//             copies partition q from rank q's slot (all-gather).
//   ll:       no barrier and no slot: every rank pushes its input into its LL area of every other rank's buffer as
//             16-byte lines {data, flag, data, flag} (NCCL's LL format: 8 payload bytes per line, the flag in each
//             aligned 8-byte half, stored and loaded as one 16-byte volatile access) with flag = epoch + 1, then
//             reduces from its own memory as each line's flags arrive. One one-way NVLink write instead of a
//             barrier and a remote read; twice the bytes on the wire, so for small messages (<= LL_SLOT / 2).
//             Two parities suffice for the same reason as two slots: rank r writes parity e & 1 of rank p again in
//             call e + 2 only after its call e + 1 received p's data of call e + 1, which p wrote after its call e
//             had read everything. Stale lines carry an older flag (e - 1, never e + 1); the area starts zeroed.
//   lamport:  as ll, but the lines are 16 bytes of payload and need no flag (the "Lamport" format of TensorRT-LLM's
//             small all-reduce): an empty area holds the word EMPTY (0xFFFFFFFF) everywhere, a sender writes its data
//             with every word equal to EMPTY changed to EMPTY_STANDIN (both NaN in fp32 and NaN in each 16-bit half,
//             so no value changes: only a NaN's payload, which the fp32 sum does not keep anyway), and a line has
//             arrived when none of its four words is EMPTY (32-bit stores cannot tear). Half the bytes of ll on
//             the wire; the price is that a line must be emptied again before it is reused: the thread that read
//             it writes EMPTY back at once. Two parities, as ll: rank p writes parity e & 1 of rank r again in call
//             e + 2, which p starts only after its call e + 1 received r's data of call e + 1 (or passed a barrier
//             with every block of r's call e + 1), which r's call e + 1 kernel sent after its call e kernel, and
//             with it every emptying store, had finished. No fence is needed inside a call.
//   lamport two-shot: the same lines, in two steps: rank q reduces part q of the lines as the others push them,
//             then pushes the sums to every other rank's gather area (lamport_two_shot_all_reduce).
// The grid and the block size are the host's choice (CustomAllReduce.blocks, .threads), the same on every rank;
// a block of any size from 32 threads up to THREADS works. The barrier is per block: block b of rank r waits only for block b of the other ranks, because block b reads
// exactly the elements that block b of every rank copied (the element -> block mapping depends only on count,
// the rank count and the grid, never on a rank's own pointers). Flags hold 2 * epoch + phase + 1 and are
// compared as serial numbers (>=), so a rank that ran ahead into the next barrier cannot be missed.
// Two slots make one barrier per call enough: a rank writes slot e & 1 again in call e + 2 only after its call
// e + 1 passed a barrier with every rank, i.e. every rank had finished call e.
// The epoch lives in device memory and is advanced by the last block of each call, so the kernel is the same in
// every call: a CUDA graph that captured it can be replayed any number of times.
//
// Programmatic dependent launch (sm_90 and later): the host may launch these kernels with the attribute
// CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, so that a call's blocks are already resident when the
// kernel before it in the stream ends, instead of being launched only then. Each thread first waits
// (griddepcontrol.wait) until that kernel has completed and its writes are visible, so everything above holds
// as it does without the attribute (where the wait returns at once); then the call lets the next kernel launch
// early in turn (griddepcontrol.launch_dependents; it too waits before it starts). The host launches this way only
// when the loaded code says it waits: jccl_car_grid_wait is 1 in the code built for sm_90 and later.
//
// Reduction: sum, accumulated in fp32 in rank order 0, 1, ..., n-1 (acc = x0; acc = acc + x1; ...; each addition
// rounded to nearest even, no FMA), then rounded once to the element type (round to nearest even). Every rank
// computes every element this way, so the result is bitwise the same on every rank and in every run.
//
// Failure: a barrier (or an LL or Lamport line) spins on its flag (or its words) with a bound. Every 256 spins it
// reads the host-pinned abort word (set by the host when the communicator is aborted, e.g. by the watchdog on a
// deadline) and the global timer; on abort or after spinLimitNs it writes 2 (aborted) or 1 (timed out) into the
// host-pinned status word and the whole call returns without writing its output (ll, lamport: without writing the
// lines that thread had left). No instruction here traps, and no NVLink multicast is used.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define JCCL_GRID_WAIT 1
#else
#define JCCL_GRID_WAIT 0
#endif

extern "C" __device__ int jccl_car_grid_wait = JCCL_GRID_WAIT;

namespace {

constexpr int MAX_RANKS = 8;
constexpr int MAX_BLOCKS = 128;
constexpr int THREADS = 512;
constexpr long long PEERS_OFF = 0;
constexpr long long CTL_OFF = 64;
constexpr long long FLAGS_OFF = 128;
constexpr long long DATA_OFF = 8192;
constexpr long long LL_SLOT = 524288;  // 512 KiB: one sender's LL lines of one parity: 256 KiB of payload
constexpr long long LAMPORT_SLOT = 262144;  // 256 KiB: one sender's Lamport lines of one parity, all payload
constexpr int LAMPORT_PARITIES = 2;  // as LL's: call e uses parity e & 1
static_assert(LAMPORT_PARITIES == 2, "the Lamport parity is epoch & 1 (a power of two, so it survives the epoch's wrap)");
constexpr unsigned int EMPTY = 0xFFFFFFFFu, EMPTY_STANDIN = 0xFFFEFFFEu;
constexpr int ALGO_ONE_SHOT = 0, ALGO_TWO_SHOT = 1, ALGO_LL = 2, ALGO_LAMPORT = 3, ALGO_LAMPORT_TWO_SHOT = 4;  // kernelAlgo
static_assert(ALGO_TWO_SHOT != ALGO_ONE_SHOT && ALGO_TWO_SHOT != ALGO_LL && ALGO_LAMPORT != ALGO_LL
              && ALGO_LAMPORT_TWO_SHOT != ALGO_LAMPORT, "the algorithms need distinct codes");
static_assert(FLAGS_OFF + 4LL * MAX_BLOCKS * MAX_RANKS <= DATA_OFF, "flags overlap the data slots");

struct Ctl {
    unsigned int epoch;
    unsigned int done;
};

__device__ __forceinline__ unsigned int* flag_at(char* base, int block, int peer) {
    return reinterpret_cast<unsigned int*>(base + FLAGS_OFF) + block * MAX_RANKS + peer;
}

__device__ __forceinline__ void st_release_sys(unsigned int* p, unsigned int v) {
    asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ unsigned int ld_acquire_sys(const unsigned int* p) {
    unsigned int v;
    asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ unsigned long long global_timer() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

struct Args {
    char* self;                   // this rank's buffer
    char* const* peers;           // this rank's view of every rank's buffer (in self)
    int rank;
    int nranks;
    const volatile int* abort_word;  // host pinned
    volatile int* status;            // host pinned
    unsigned long long spin_limit_ns;
};

// Every thread of the block calls it. Returns false (in every thread) when the call was aborted or timed out.
__device__ bool barrier(const Args& a, unsigned int value) {
    __shared__ int s_fail;
    if (threadIdx.x == 0) {
        s_fail = 0;
    }
    __syncthreads();  // this block's writes to its slot come before the release below
    int t = threadIdx.x;
    if (t < a.nranks) {
        st_release_sys(flag_at(a.peers[t], blockIdx.x, a.rank), value);
        const unsigned int* mine = flag_at(a.self, blockIdx.x, t);
        unsigned long long start = 0;
        unsigned int spins = 0;
        while ((int)(ld_acquire_sys(mine) - value) < 0) {
            if ((++spins & 255) == 0) {
                if (*a.abort_word != 0) {
                    *a.status = 2;
                    s_fail = 1;
                    break;
                }
                unsigned long long now = global_timer();
                if (start == 0) {
                    start = now;
                } else if (now - start > a.spin_limit_ns) {
                    *a.status = 1;
                    s_fail = 1;
                    break;
                }
            }
        }
    }
    __syncthreads();
    return s_fail == 0;
}

template <typename T> struct Conv;
template <> struct Conv<float> {
    static __device__ __forceinline__ float to(float x) { return x; }
    static __device__ __forceinline__ float from(float x) { return x; }
};
template <> struct Conv<__half> {
    static __device__ __forceinline__ float to(__half x) { return __half2float(x); }
    static __device__ __forceinline__ __half from(float x) { return __float2half_rn(x); }
};
template <> struct Conv<__nv_bfloat16> {
    static __device__ __forceinline__ float to(__nv_bfloat16 x) { return __bfloat162float(x); }
    static __device__ __forceinline__ __nv_bfloat16 from(float x) { return __float2bfloat16_rn(x); }
};

template <typename T> union Pack {
    static constexpr int N = 16 / sizeof(T);
    uint4 v;
    T e[N];
};

// A pack of the user's buffer: one 16-byte access when aligned, else element by element.
template <typename T> __device__ __forceinline__ uint4 load_user(const T* in, long long i, bool aligned) {
    if (aligned) {
        return reinterpret_cast<const uint4*>(in)[i];
    }
    Pack<T> p;
#pragma unroll
    for (int k = 0; k < Pack<T>::N; k++) {
        p.e[k] = in[i * Pack<T>::N + k];
    }
    return p.v;
}

template <typename T> __device__ __forceinline__ void store_user(T* out, long long i, uint4 v, bool aligned) {
    if (aligned) {
        reinterpret_cast<uint4*>(out)[i] = v;
        return;
    }
    Pack<T> p;
    p.v = v;
#pragma unroll
    for (int k = 0; k < Pack<T>::N; k++) {
        out[i * Pack<T>::N + k] = p.e[k];
    }
}

// The vectors of ranks 0..n-1 (16-byte packs or 8-byte LL lines of elements of T), summed element by element in
// rank order in fp32 (acc = x0; acc = acc + x1; ...; no FMA), each sum rounded once to T.
template <typename T, typename V> __device__ __forceinline__ V sum_in_rank_order(const V* v, int n) {
    constexpr int E = sizeof(V) / sizeof(T);
    union U {
        V v;
        T e[E];
    };
    U in;
    in.v = v[0];
    float acc[E];
#pragma unroll
    for (int k = 0; k < E; k++) {
        acc[k] = Conv<T>::to(in.e[k]);
    }
#pragma unroll
    for (int p = 1; p < MAX_RANKS; p++) {
        if (p < n) {
            in.v = v[p];
#pragma unroll
            for (int k = 0; k < E; k++) {
                acc[k] = __fadd_rn(acc[k], Conv<T>::to(in.e[k]));
            }
        }
    }
    U o;
#pragma unroll
    for (int k = 0; k < E; k++) {
        o.e[k] = Conv<T>::from(acc[k]);
    }
    return o.v;
}

// Pack i of every rank's slot, summed in rank order in fp32.
template <typename T> __device__ __forceinline__ uint4 reduce_pack(char* const* slots, int n, long long i) {
    uint4 v[MAX_RANKS];
#pragma unroll
    for (int p = 0; p < MAX_RANKS; p++) {
        if (p < n) {
            v[p] = __ldcg(reinterpret_cast<const uint4*>(slots[p]) + i);
        }
    }
    return sum_in_rank_order<T>(v, n);
}

// Element j (of the tail past the last whole pack) of every rank's slot, summed in rank order in fp32.
template <typename T> __device__ __forceinline__ T reduce_elem(char* const* slots, int n, long long j) {
    float acc = Conv<T>::to(__ldcg(reinterpret_cast<const T*>(slots[0]) + j));
    for (int p = 1; p < n; p++) {
        acc = __fadd_rn(acc, Conv<T>::to(__ldcg(reinterpret_cast<const T*>(slots[p]) + j)));
    }
    return Conv<T>::from(acc);
}

// ---- LL: 16-byte lines {data0, flag, data1, flag}

__device__ __forceinline__ void st_ll(uint4* p, uint2 d, unsigned int f) {
    asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(d.x), "r"(f), "r"(d.y), "r"(f)
                 : "memory");
}

__device__ __forceinline__ uint4 ld_ll(const uint4* p) {
    uint4 v;
    asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p)
                 : "memory");
    return v;
}

// Called every spin of a wait: every 256 spins, false after an abort or the spin limit (status written). Every thread
// of a block may spin, so only the first lane of each warp reads the host-pinned abort word (over PCIe) and tells the
// block through *stop in shared memory.
__device__ __forceinline__ bool keep_waiting(unsigned int& spins, const Args& a, unsigned long long& start,
                                             volatile int* stop) {
    if ((++spins & 255) != 0) {
        return true;
    }
    if (*stop != 0) {
        return false;
    }
    if ((threadIdx.x & 31) == 0 && *a.abort_word != 0) {
        *a.status = 2;
        *stop = 1;
        return false;
    }
    unsigned long long now = global_timer();
    if (start == 0) {
        start = now;
    } else if (now - start > a.spin_limit_ns) {
        *a.status = 1;
        *stop = 1;
        return false;
    }
    return true;
}

// The peers this rank waits for: every rank but itself.
__device__ __forceinline__ unsigned int others(const Args& a) {
    return ((1u << a.nranks) - 1u) & ~(1u << a.rank);
}

// The k-th peer after this rank (1 <= k < nranks). Pushing to rank+1, rank+2, ... spreads the ranks' first stores
// over every peer instead of all ranks writing to rank 0 first (Lamport one-shot at 256 KiB on 4 H200: ~0.3 us less).
__device__ __forceinline__ int peer_after(const Args& a, int k) {
    return a.rank + k < a.nranks ? a.rank + k : a.rank + k - a.nranks;
}

// Waits until line l of every other rank's LL area (area + p * LL_SLOT) carries flag f in both halves, loading the
// missing ones together each spin (one round trip for all peers, not one per peer); false after an abort or the spin
// limit.
__device__ __forceinline__ bool wait_ll(const char* area, long long l, unsigned int f, const Args& a, uint2* v,
                                        unsigned long long& start, volatile int* stop) {
    unsigned int missing = others(a), spins = 0;
    while (true) {
        uint4 x[MAX_RANKS];
#pragma unroll
        for (int p = 0; p < MAX_RANKS; p++) {
            if (missing & (1u << p)) {
                x[p] = ld_ll(reinterpret_cast<const uint4*>(area + p * LL_SLOT) + l);
            }
        }
#pragma unroll
        for (int p = 0; p < MAX_RANKS; p++) {
            if ((missing & (1u << p)) && x[p].y == f && x[p].w == f) {
                v[p] = make_uint2(x[p].x, x[p].z);
                missing &= ~(1u << p);
            }
        }
        if (missing == 0) {
            return true;
        }
        if (!keep_waiting(spins, a, start, stop)) {
            return false;
        }
    }
}

// Vector l of the user's buffer (an 8-byte LL line or a 16-byte Lamport line: sizeof(V) / sizeof(T) elements), zero
// past count.
template <typename T, typename V> __device__ __forceinline__ V load_vec(const T* in, long long l, long long count, bool aligned) {
    constexpr int E = sizeof(V) / sizeof(T);
    const long long base = l * E;
    if (aligned && base + E <= count) {
        return reinterpret_cast<const V*>(in)[l];
    }
    union {
        V v;
        T e[E];
    } u;
    u.v = V{};
#pragma unroll
    for (int k = 0; k < E; k++) {
        if (base + k < count) {
            u.e[k] = in[base + k];
        }
    }
    return u.v;
}

// Writes the elements of vector l that lie before count.
template <typename T, typename V> __device__ __forceinline__ void store_vec(T* out, long long l, V v, long long count, bool aligned) {
    constexpr int E = sizeof(V) / sizeof(T);
    const long long base = l * E;
    if (aligned && base + E <= count) {
        reinterpret_cast<V*>(out)[l] = v;
        return;
    }
    union {
        V v;
        T e[E];
    } u;
    u.v = v;
#pragma unroll
    for (int k = 0; k < E; k++) {
        if (base + k < count) {
            out[base + k] = u.e[k];
        }
    }
}

// v[rank] = x without indexing v by a run-time value (which would put v in local memory).
template <typename V> __device__ __forceinline__ void set_own(V* v, int rank, V x) {
#pragma unroll
    for (int p = 0; p < MAX_RANKS; p++) {
        if (p == rank) {
            v[p] = x;
        }
    }
}

template <typename T>
__device__ void ll_all_reduce(const Args& a, const T* in, T* out, long long count, unsigned int epoch, long long ll_off,
                              volatile int* stop) {
    const unsigned int f = epoch + 1u;
    const long long par = ll_off + (long long)(epoch & 1) * MAX_RANKS * LL_SLOT;
    const bool aligned = ((reinterpret_cast<uintptr_t>(in) | reinterpret_cast<uintptr_t>(out)) & 7) == 0;
    const long long lines = (count * (long long)sizeof(T) + 7) / 8;
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long gid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    // push: this rank's lines into its area of every other rank
    for (long long l = gid; l < lines; l += stride) {
        uint2 d = load_vec<T, uint2>(in, l, count, aligned);
        for (int p = 0; p < a.nranks; p++) {
            if (p != a.rank) {
                st_ll(reinterpret_cast<uint4*>(a.peers[p] + par + a.rank * LL_SLOT) + l, d, f);
            }
        }
    }
    // reduce each line once every rank's copy of it has arrived here
    unsigned long long start = 0;
    for (long long l = gid; l < lines; l += stride) {
        uint2 v[MAX_RANKS];
        set_own(v, a.rank, load_vec<T, uint2>(in, l, count, aligned));
        if (!wait_ll(a.self + par, l, f, a, v, start, stop)) {
            break;
        }
        store_vec<T, uint2>(out, l, sum_in_rank_order<T>(v, a.nranks), count, aligned);
    }
}

// ---- Lamport: 16-byte lines of payload, EMPTY where nothing arrived yet

__device__ __forceinline__ unsigned int lamport_word(unsigned int w) {
    return w == EMPTY ? EMPTY_STANDIN : w;
}

__device__ __forceinline__ uint4 lamport_line(uint4 v) {
    return make_uint4(lamport_word(v.x), lamport_word(v.y), lamport_word(v.z), lamport_word(v.w));
}

__device__ __forceinline__ void st_volatile(uint4* p, uint4 v) {
    asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
}


__device__ __forceinline__ bool arrived(uint4 x) {
    return x.x != EMPTY && x.y != EMPTY && x.z != EMPTY && x.w != EMPTY;
}

// Waits until no word of line l of the ranks in `missing` (line(p) + l) is EMPTY, loading the missing lines together
// each spin; writes EMPTY back into each line once read (see the header: empty for the call after next). False after
// an abort or the spin limit.
template <typename Line>
__device__ __forceinline__ bool wait_lamport(unsigned int missing, Line line, const Args& a, uint4* v,
                                             unsigned long long& start, volatile int* stop) {
    unsigned int spins = 0;
    while (true) {
        uint4 x[MAX_RANKS];
#pragma unroll
        for (int p = 0; p < MAX_RANKS; p++) {
            if (missing & (1u << p)) {
                x[p] = ld_ll(line(p));
            }
        }
#pragma unroll
        for (int p = 0; p < MAX_RANKS; p++) {
            if ((missing & (1u << p)) && arrived(x[p])) {
                v[p] = x[p];
                st_volatile(line(p), make_uint4(EMPTY, EMPTY, EMPTY, EMPTY));
                missing &= ~(1u << p);
            }
        }
        if (missing == 0) {
            return true;
        }
        if (!keep_waiting(spins, a, start, stop)) {
            return false;
        }
    }
}

__device__ __forceinline__ char* lamport_area(char* base, long long lp_off, unsigned int par, int sender) {
    return base + lp_off + ((long long)par * MAX_RANKS + sender) * LAMPORT_SLOT;
}

template <typename T>
__device__ void lamport_all_reduce(const Args& a, const T* in, T* out, long long count, unsigned int par, long long lp_off,
                                   volatile int* stop) {
    const bool aligned = ((reinterpret_cast<uintptr_t>(in) | reinterpret_cast<uintptr_t>(out)) & 15) == 0;
    const long long lines = (count * (long long)sizeof(T) + 15) / 16;
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long gid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    // push: this rank's lines into its area of every other rank
    for (long long l = gid; l < lines; l += stride) {
        uint4 d = lamport_line(load_vec<T, uint4>(in, l, count, aligned));
        for (int k = 1; k < a.nranks; k++) {
            const int p = peer_after(a, k);
            st_volatile(reinterpret_cast<uint4*>(lamport_area(a.peers[p], lp_off, par, a.rank)) + l, d);
        }
    }
    // reduce each line once every rank's copy of it has arrived here (this rank's own, changed as the others see it,
    // so that every rank sums the same values)
    unsigned long long start = 0;
    for (long long l = gid; l < lines; l += stride) {
        uint4 v[MAX_RANKS];
        set_own(v, a.rank, lamport_line(load_vec<T, uint4>(in, l, count, aligned)));
        auto line = [&](int p) { return reinterpret_cast<uint4*>(lamport_area(a.self, lp_off, par, p)) + l; };
        if (!wait_lamport(others(a), line, a, v, start, stop)) {
            break;
        }
        store_vec<T, uint4>(out, l, sum_in_rank_order<T>(v, a.nranks), count, aligned);
    }
}

// Two-shot Lamport: rank q owns the lines [q * part, (q + 1) * part). Each rank pushes the lines of part q of its input
// to rank q (its Lamport area, as one-shot), reduces its own part as the peers' lines arrive, and pushes the sums into
// the gather area of every other rank (one area per parity, each line written only by its owner), which copies them
// out as they arrive. Each rank sends 2 (n - 1) / n of the message instead of n - 1 times it.
template <typename T>
__device__ void lamport_two_shot_all_reduce(const Args& a, const T* in, T* out, long long count, unsigned int par,
                                            long long lp_off, long long ag_off, volatile int* stop) {
    const bool aligned = ((reinterpret_cast<uintptr_t>(in) | reinterpret_cast<uintptr_t>(out)) & 15) == 0;
    const long long lines = (count * (long long)sizeof(T) + 15) / 16;
    const long long part = (lines + a.nranks - 1) / a.nranks;
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long gid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long mine_lo = a.rank * part, mine_hi = min(lines, mine_lo + part);
    // reduce-scatter: every line of another rank's part to that rank
    for (long long l = gid; l < lines; l += stride) {
        int q = (int)(l / part);
        if (q != a.rank) {
            st_volatile(reinterpret_cast<uint4*>(lamport_area(a.peers[q], lp_off, par, a.rank)) + l,
                        lamport_line(load_vec<T, uint4>(in, l, count, aligned)));
        }
    }
    unsigned long long start = 0;
    for (long long l = mine_lo + gid; l < mine_hi; l += stride) {
        uint4 v[MAX_RANKS];
        set_own(v, a.rank, lamport_line(load_vec<T, uint4>(in, l, count, aligned)));
        auto line = [&](int p) { return reinterpret_cast<uint4*>(lamport_area(a.self, lp_off, par, p)) + l; };
        if (!wait_lamport(others(a), line, a, v, start, stop)) {
            return;
        }
        uint4 r = lamport_line(sum_in_rank_order<T>(v, a.nranks));
        for (int k = 1; k < a.nranks; k++) {
            const int p = peer_after(a, k);
            st_volatile(reinterpret_cast<uint4*>(a.peers[p] + ag_off + (long long)par * LAMPORT_SLOT) + l, r);
        }
        store_vec<T, uint4>(out, l, r, count, aligned);
    }
    // all-gather: the other parts' sums as their owners push them
    for (long long l = gid; l < lines; l += stride) {
        const int q = (int)(l / part);
        if (q == a.rank) {
            continue;
        }
        uint4 r[MAX_RANKS];
        auto line = [&](int) { return reinterpret_cast<uint4*>(a.self + ag_off + (long long)par * LAMPORT_SLOT) + l; };
        if (!wait_lamport(1u << q, line, a, r, start, stop)) {
            return;
        }
        uint4 got = r[0];
#pragma unroll
        for (int p = 1; p < MAX_RANKS; p++) {
            if (p == q) {
                got = r[p];
            }
        }
        store_vec<T, uint4>(out, l, got, count, aligned);
    }
}

template <typename T>
__device__ void all_reduce(char* self, const T* in, T* out, long long count, int rank, int nranks, int algo,
                           long long slot_bytes, const volatile int* abort_word, volatile int* status,
                           unsigned long long spin_limit_ns) {
#if JCCL_GRID_WAIT
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
    constexpr int N = Pack<T>::N;
    Args a{self, reinterpret_cast<char* const*>(self + PEERS_OFF), rank, nranks, abort_word, status, spin_limit_ns};
    Ctl* ctl = reinterpret_cast<Ctl*>(self + CTL_OFF);
    __shared__ unsigned int s_epoch;
    __shared__ int s_stop;  // ll, lamport: a thread saw the abort word or the spin limit
    if (threadIdx.x == 0) {
        s_epoch = ctl->epoch;
        s_stop = 0;
    }
    __syncthreads();
    const unsigned int epoch = s_epoch;
    const long long lp_off = DATA_OFF + 2 * slot_bytes + 2LL * MAX_RANKS * LL_SLOT;
    const long long slot_off = DATA_OFF + (long long)(epoch & 1) * slot_bytes;
    char* slots[MAX_RANKS];
#pragma unroll
    for (int p = 0; p < MAX_RANKS; p++) {
        slots[p] = p < nranks ? a.peers[p] + slot_off : nullptr;
    }
    uint4* mine = reinterpret_cast<uint4*>(self + slot_off);
    const bool aligned = ((reinterpret_cast<uintptr_t>(in) | reinterpret_cast<uintptr_t>(out)) & 15) == 0;
    const long long packs = count / N;
    const long long tail0 = packs * N;
    const int tail = (int)(count - tail0);
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long gid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const bool tail_thread = blockIdx.x == 0 && threadIdx.x < tail;
    bool ok;

    if (algo == ALGO_LL) {
        ll_all_reduce<T>(a, in, out, count, epoch, DATA_OFF + 2 * slot_bytes, &s_stop);
    } else if (algo == ALGO_LAMPORT) {
        lamport_all_reduce<T>(a, in, out, count, epoch & (LAMPORT_PARITIES - 1), lp_off, &s_stop);
    } else if (algo == ALGO_LAMPORT_TWO_SHOT) {
        lamport_two_shot_all_reduce<T>(a, in, out, count, epoch & (LAMPORT_PARITIES - 1), lp_off,
                                       lp_off + (long long)LAMPORT_PARITIES * MAX_RANKS * LAMPORT_SLOT, &s_stop);
    } else if (algo == ALGO_ONE_SHOT) {
        for (long long i = gid; i < packs; i += stride) {
            mine[i] = load_user(in, i, aligned);
        }
        if (tail_thread) {
            reinterpret_cast<T*>(mine)[tail0 + threadIdx.x] = in[tail0 + threadIdx.x];
        }
        ok = barrier(a, 2u * epoch + 1u);
        if (ok) {
            for (long long i = gid; i < packs; i += stride) {
                store_user(out, i, reduce_pack<T>(slots, nranks, i), aligned);
            }
            if (tail_thread) {
                out[tail0 + threadIdx.x] = reduce_elem<T>(slots, nranks, tail0 + threadIdx.x);
            }
        }
    } else {
        const long long part = (packs + nranks - 1) / nranks;
        for (int q = 0; q < nranks; q++) {
            long long lo = q * part, hi = min(packs, lo + part);
            for (long long i = lo + gid; i < hi; i += stride) {
                mine[i] = load_user(in, i, aligned);
            }
        }
        if (tail_thread) {
            reinterpret_cast<T*>(mine)[tail0 + threadIdx.x] = in[tail0 + threadIdx.x];
        }
        ok = barrier(a, 2u * epoch + 1u);
        if (ok) {
            long long lo = rank * part, hi = min(packs, lo + part);
            for (long long i = lo + gid; i < hi; i += stride) {
                uint4 r = reduce_pack<T>(slots, nranks, i);
                mine[i] = r;  // only this rank reads partition `rank` of its slot in the first phase
                store_user(out, i, r, aligned);
            }
            if (tail_thread) {
                out[tail0 + threadIdx.x] = reduce_elem<T>(slots, nranks, tail0 + threadIdx.x);
            }
            ok = barrier(a, 2u * epoch + 2u);
        }
        if (ok) {
            for (int q = 0; q < nranks; q++) {
                if (q == rank) {
                    continue;
                }
                long long lo = q * part, hi = min(packs, lo + part);
                const uint4* theirs = reinterpret_cast<const uint4*>(slots[q]);
                for (long long i = lo + gid; i < hi; i += stride) {
                    store_user(out, i, __ldcg(theirs + i), aligned);
                }
            }
        }
    }
    // The last block of the call advances the epoch; the next call (a later kernel on any stream of this
    // communicator, ordered after this one by the host) reads it.
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned int prev = atomicAdd(&ctl->done, 1u);
        if (prev == gridDim.x - 1) {
            ctl->done = 0;
            ctl->epoch = epoch + 1;
            __threadfence();
        }
    }
}

}  // namespace

#define JCCL_CAR_KERNEL(NAME, T)                                                                                    \
    extern "C" __global__ void __launch_bounds__(THREADS)                                                           \
        NAME(char* self, const void* in, void* out, long long count, int rank, int nranks, int algo,              \
             long long slot_bytes, const volatile int* abort_word, volatile int* status,                            \
             unsigned long long spin_limit_ns) {                                                                    \
        all_reduce<T>(self, static_cast<const T*>(in), static_cast<T*>(out), count, rank, nranks, algo,           \
                      slot_bytes, abort_word, status, spin_limit_ns);                                               \
    }

JCCL_CAR_KERNEL(jccl_car_f32, float)
JCCL_CAR_KERNEL(jccl_car_f16, __half)
JCCL_CAR_KERNEL(jccl_car_bf16, __nv_bfloat16)
