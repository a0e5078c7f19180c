// A kernel that waits delay_ns on the GPU's global timer, then writes x[i] = v + (i % 1024) (test resource of
// CustomAllReduceTest: the next kernel in the stream must see these writes).
extern "C" __global__ void slow_fill(float* x, float v, int n, unsigned long long delay_ns) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while (t - t0 < delay_ns);
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        x[i] = v + (float)(i % 1024);
    }
}
