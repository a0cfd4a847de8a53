// Every Qwen2 decoder layer of one decode row in one persistent kernel (see decode_megakernel.py for why).
//
// One block per SM; a layer is five phases separated by grid barriers: q/k/v (RMSNorm fused), attention (one
// block per query head), output projection + residual, gate/up (RMSNorm fused, SiLU-GLU), down projection +
// residual. Each block owns a fixed slice of rows of every weight matrix and keeps the slices of a whole
// layer in shared memory: as soon as it has used a slice it starts copying (cp.async) the same slice of the
// next layer, so the weight traffic runs under the barriers and the small phases instead of after them.
// Rounding follows decode_kernels.py: float32 accumulation, float16 at the same points.
//
// Compile-time constants (NVRTC -D options): HIDDEN, INNER, HEADS, KV_HEADS, HEAD_DIM, LAYERS, MAX_LEN,
// BLOCKS, THREADS, ROWS_QKV, ROWS_O, ROWS_GU, ROWS_DOWN (rows of each phase per block).

typedef unsigned short half_t;
typedef unsigned int u32;
typedef unsigned long long u64;

#define WARPS (THREADS / 32)
#define QKV_N ((HEADS + 2 * KV_HEADS) * HEAD_DIM)
#define VH (HIDDEN / 8)               // 16-byte vectors of a hidden-size row
#define VI (INNER / 8)                // ... of an inner-size row
#define LANE_VH ((VH + 31) / 32)      // a lane's vectors of a hidden-size row
#define GROUP (HEADS / KV_HEADS)
#define TILE_QKV (ROWS_QKV * HIDDEN * 2)
#define TILE_O (ROWS_O * HIDDEN * 2)
#define TILE_GU (2 * ROWS_GU * HIDDEN * 2)
#define TILE_DOWN (ROWS_DOWN * INNER * 2)
#define OFF_O TILE_QKV
#define OFF_GU (OFF_O + TILE_O)
#define OFF_DOWN (OFF_GU + TILE_GU)
#define OFF_SCRATCH (OFF_DOWN + TILE_DOWN)
#define NEG_INF (-__int_as_float(0x7f800000))
#ifndef PROBE_MODE
#define PROBE_MODE 0
#endif
#ifndef PROBE_TIMES
#define PROBE_TIMES 0
#endif

// ---- PROBE_TIMES: thread 0's clock at NSTAMPS points of each layer (after the barrier words) -----------------
#define NSTAMPS 20
#if PROBE_TIMES
__shared__ u64* stamp_row;
#define STAMP(i) do { if (threadIdx.x == 0) stamp_row[(i)] = clock64(); } while (0)
#else
#define STAMP(i) do {} while (0)
#endif

// ---- float16 without cuda_fp16.h (NVRTC may not find it): conversions in PTX -------------------------------
__device__ __forceinline__ float h2f(u32 h) {
    float f;
    unsigned short s = (unsigned short)h;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(s));
    return f;
}
__device__ __forceinline__ half_t f2h(float f) {
    unsigned short s;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(s) : "f"(f));
    return s;
}
__device__ __forceinline__ float rh(float f) { return h2f(f2h(f)); }  // rounded to float16

__device__ __forceinline__ void unpack8(uint4 v, float* f) {
    u32 w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        f[2 * i] = h2f(w[i] & 0xffffu);
        f[2 * i + 1] = h2f(w[i] >> 16);
    }
}

// activations written by other blocks in this launch: read through L2 (L1 is not coherent across SMs)
__device__ __forceinline__ uint4 ld_cg4(const void* p) {
    uint4 v;
    asm volatile("ld.global.cg.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    return v;
}
__device__ __forceinline__ u32 ld_cg_half(const half_t* p) {
    unsigned short s;
    asm volatile("ld.global.cg.u16 %0, [%1];" : "=h"(s) : "l"(p));
    return s;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int off = 16; off; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

// ---- weight slices: global -> shared with cp.async, one commit group per slice --------------------------------
__device__ __forceinline__ u32 smem_addr(const void* p) {
    u32 a;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
    return a;
}
__device__ __forceinline__ void copy_span(char* dst, const char* src, int bytes) {
    u32 base = smem_addr(dst);
    for (int off = threadIdx.x * 16; off < bytes; off += THREADS * 16)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(base + off), "l"(src + off) : "memory");
}
#ifndef USE_TMA
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
#endif
// the slice needed now is the 4th-newest group: the three slices issued after it may still be in flight
__device__ __forceinline__ void wait_slice() {
    asm volatile("cp.async.wait_group 3;" ::: "memory");
    __syncthreads();
}

__device__ __forceinline__ int rows_of(int total, int per_block) {
    int n = total - blockIdx.x * per_block;
    return n < 0 ? 0 : (n < per_block ? n : per_block);
}

// per layer: ln1, w_qkv, b_qkv, w_o, ln2, w_gate_up, w_down (device pointers)
enum { LN1, W_QKV, B_QKV, W_O, LN2, W_GU, W_DOWN, PER_LAYER };

#ifndef USE_TMA
__device__ void issue_slice(int phase, const u64* layer, char* smem) {
    const int b = blockIdx.x;
    if (phase == 0) {
        copy_span(smem, (const char*)layer[W_QKV] + (size_t)b * TILE_QKV, rows_of(QKV_N, ROWS_QKV) * HIDDEN * 2);
    } else if (phase == 1) {
        copy_span(smem + OFF_O, (const char*)layer[W_O] + (size_t)b * TILE_O, rows_of(HIDDEN, ROWS_O) * HIDDEN * 2);
    } else if (phase == 2) {  // gate rows, then the matching up rows (INNER rows further down the fused matrix)
        const char* w = (const char*)layer[W_GU];
        int bytes = rows_of(INNER, ROWS_GU) * HIDDEN * 2;
        copy_span(smem + OFF_GU, w + (size_t)b * ROWS_GU * HIDDEN * 2, bytes);
        copy_span(smem + OFF_GU + ROWS_GU * HIDDEN * 2, w + ((size_t)INNER + b * ROWS_GU) * HIDDEN * 2, bytes);
    } else {
        copy_span(smem + OFF_DOWN, (const char*)layer[W_DOWN] + (size_t)b * TILE_DOWN,
                  rows_of(HIDDEN, ROWS_DOWN) * INNER * 2);
    }
    commit();
}
__device__ __forceinline__ void wait_phase_slice(int phase, int layer, char* smem) { wait_slice(); }
__device__ __forceinline__ void init_slices(char* smem) {}
#else
// Hopper bulk copies (TMA): thread 0 issues a few instructions per slice; an mbarrier per region counts the bytes
#define OFF_MBAR (OFF_SCRATCH + 2880)
__device__ __forceinline__ u32 mbar(char* smem, int phase) { return smem_addr(smem + OFF_MBAR + 8 * phase); }
__device__ __forceinline__ void init_slices(char* smem) {
    if (threadIdx.x == 0) {
        for (int p = 0; p < 4; ++p) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(mbar(smem, p)) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
}
__device__ __forceinline__ void bulk(char* dst, const char* src, int bytes, u32 bar) {
    for (int off = 0; off < bytes; off += 16384) {
        const int n = bytes - off < 16384 ? bytes - off : 16384;
#ifdef EVICT_FIRST  // the weights pass through L2 once a step: first to go, so they do not push out activations
        u64 policy;
        asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;"
                     ::"r"(smem_addr(dst + off)), "l"(src + off), "r"(n), "r"(bar), "l"(policy) : "memory");
#else
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     ::"r"(smem_addr(dst + off)), "l"(src + off), "r"(n), "r"(bar) : "memory");
#endif
    }
}
__device__ void issue_slice(int phase, const u64* layer, char* smem) {
    if (threadIdx.x != 0) return;
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // the region was read by ordinary loads
    const int b = blockIdx.x;
    const u32 bar = mbar(smem, phase);
    int bytes;
    if (phase == 0) bytes = rows_of(QKV_N, ROWS_QKV) * HIDDEN * 2;
    else if (phase == 1) bytes = rows_of(HIDDEN, ROWS_O) * HIDDEN * 2;
    else if (phase == 2) bytes = rows_of(INNER, ROWS_GU) * HIDDEN * 2;
    else bytes = rows_of(HIDDEN, ROWS_DOWN) * INNER * 2;
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(phase == 2 ? 2 * bytes : bytes) : "memory");
    if (phase == 0) {
        bulk(smem, (const char*)layer[W_QKV] + (size_t)b * TILE_QKV, bytes, bar);
    } else if (phase == 1) {
        bulk(smem + OFF_O, (const char*)layer[W_O] + (size_t)b * TILE_O, bytes, bar);
    } else if (phase == 2) {
        const char* w = (const char*)layer[W_GU];
        bulk(smem + OFF_GU, w + (size_t)b * ROWS_GU * HIDDEN * 2, bytes, bar);
        bulk(smem + OFF_GU + ROWS_GU * HIDDEN * 2, w + ((size_t)INNER + b * ROWS_GU) * HIDDEN * 2, bytes, bar);
    } else {
        bulk(smem + OFF_DOWN, (const char*)layer[W_DOWN] + (size_t)b * TILE_DOWN, bytes, bar);
    }
}
__device__ __forceinline__ void commit() {}
// PROBE_MODE 4: the mbarrier phase completed without copying (arrive with no bytes)
__device__ __forceinline__ void fake_slice(int phase, char* smem) {
    if (threadIdx.x == 0) asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(mbar(smem, phase)) : "memory");
}
__device__ __forceinline__ void issue_slice_real(int phase, const u64* layer, char* smem) { issue_slice(phase, layer, smem); }
__device__ __forceinline__ void wait_phase_slice(int phase, int layer, char* smem) {
    const u32 bar = mbar(smem, phase), parity = layer & 1;
    u32 done;
    do {
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                     : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    } while (!done);
}
#endif

// ---- grid barrier ---------------------------------------------------------------------------------------------
#ifndef FLAG_BARRIER
// a 64-bit arrival counter that only grows (no reset, no overflow in practice); arrive and wait apart, so that a
// block can issue its next copies between them
__device__ __forceinline__ u64 grid_arrive(u64* counter) {
    __syncthreads();
    u64 target = 0;
    if (threadIdx.x == 0) {
        u64 old;
#ifndef NO_FENCE  // the atomic is a release already; the fence is the cooperative-groups habit
        __threadfence();
#endif
        asm volatile("atom.release.gpu.global.add.u64 %0, [%1], 1;" : "=l"(old) : "l"(counter) : "memory");
        target = (old / BLOCKS + 1) * BLOCKS;
    }
    return target;
}
__device__ __forceinline__ void grid_wait(u64* counter, u64 target) {
    if (threadIdx.x == 0) {
        u64 seen;
        do {
            asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(seen) : "l"(counter) : "memory");
        } while (seen < target);
    }
    __syncthreads();
}
__device__ __forceinline__ void grid_sync(u64* counter) { grid_wait(counter, grid_arrive(counter)); }
#else
// one flag per block (its barrier count, only grows): each block stores its own and warp 0 polls all of them,
// so arrivals do not serialize on one address
__device__ __forceinline__ void grid_sync(u64* flags) {
    __syncthreads();
    if (threadIdx.x < 32) {
        u64 mine;
        asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(mine) : "l"(flags + blockIdx.x) : "memory");
        __syncwarp();
        if (threadIdx.x == 0) {
            __threadfence();
            asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(flags + blockIdx.x), "l"(mine + 1) : "memory");
        }
        for (int i = threadIdx.x; i < BLOCKS; i += 32) {
            u64 seen;
            do {
                asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(seen) : "l"(flags + i) : "memory");
            } while (seen < mine + 1);
        }
        __syncwarp();
    }
    __syncthreads();
}
// (the block's __syncthreads here: the caller refills shared memory before grid_wait; fixed after call 10,
// whose "flags" run lacked it and read half-refilled slices)
__device__ __forceinline__ u64 grid_arrive(u64*) { __syncthreads(); return 0; }
__device__ __forceinline__ void grid_wait(u64* flags, u64) { grid_sync(flags); }
#endif

// ---- the phases ---------------------------------------------------------------------------------------------
// This warp's share of rmsnorm(x) * ln, as decode_kernels.rms_gemv rounds it; lane vectors lane + 32 j.
__device__ void normed(const half_t* x, const half_t* ln, float eps, float h[LANE_VH][8]) {
    const int lane = threadIdx.x & 31;
    float ss = 0.f;
    uint4 xs[LANE_VH], lns[LANE_VH];
#pragma unroll
    for (int j = 0; j < LANE_VH; ++j) {  // the input and the norm weight in one round trip
        const int v = lane + 32 * j;
        if (v < VH) {
            xs[j] = ld_cg4(x + v * 8);
            lns[j] = *(const uint4*)(ln + v * 8);
        }
    }
#pragma unroll
    for (int j = 0; j < LANE_VH; ++j) {
        const int v = lane + 32 * j;
        if (v < VH) {
            unpack8(xs[j], h[j]);
#pragma unroll
            for (int e = 0; e < 8; ++e) ss += h[j][e] * h[j][e];
        }
    }
    const float rstd = 1.f / sqrtf(warp_sum(ss) / HIDDEN + eps);
#pragma unroll
    for (int j = 0; j < LANE_VH; ++j) {
        const int v = lane + 32 * j;
        if (v < VH) {
            float w[8];
            unpack8(lns[j], w);
#pragma unroll
            for (int e = 0; e < 8; ++e) h[j][e] = rh(rh(h[j][e] * rstd) * w[e]);
        }
    }
}

// a hidden-size input vector (float16, written in this launch) as this lane's float32 share
__device__ void lane_share(const half_t* a, float h[LANE_VH][8]) {
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int j = 0; j < LANE_VH; ++j) {
        const int v = lane + 32 * j;
        if (v < VH) unpack8(ld_cg4(a + v * 8), h[j]);
    }
}

// W[rows[i]] . h for up to N rows at once: the partial sums first, then the N reductions interleaved
template <int N>
__device__ __forceinline__ void row_dots(const char* base, int first, int count, const float h[LANE_VH][8],
                                         float* out) {
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int i = 0; i < N; ++i) {
        out[i] = 0.f;
        if (i < count) {
            const uint4* r = (const uint4*)(base + (first + i * WARPS) * HIDDEN * 2);
#pragma unroll
            for (int j = 0; j < LANE_VH; ++j) {
                const int v = lane + 32 * j;
                if (v < VH) {
                    float w[8];
                    unpack8(r[v], w);
#pragma unroll
                    for (int e = 0; e < 8; ++e) out[i] += w[e] * h[j][e];
                }
            }
        }
    }
#pragma unroll
    for (int off = 16; off; off >>= 1) {
#pragma unroll
        for (int i = 0; i < N; ++i) out[i] += __shfl_xor_sync(0xffffffffu, out[i], off);
    }
}

__device__ void phase_qkv(const u64* layer, const half_t* x, half_t* qkv, float eps, const char* smem) {
    const int n = rows_of(QKV_N, ROWS_QKV), warp = threadIdx.x / 32, lane = threadIdx.x & 31;
    if (warp >= n) return;
    const half_t* bias = (const half_t*)layer[B_QKV];
    const int r0 = blockIdx.x * ROWS_QKV;
    constexpr int PER_WARP = (ROWS_QKV + WARPS - 1) / WARPS;
    float b[PER_WARP], acc[PER_WARP];
#pragma unroll
    for (int i = 0; i < PER_WARP; ++i) b[i] = warp + i * WARPS < n ? h2f(bias[r0 + warp + i * WARPS]) : 0.f;
    float h[LANE_VH][8];
    normed(x, (const half_t*)layer[LN1], eps, h);
    STAMP(11);
    const int count = (n - warp + WARPS - 1) / WARPS;
    row_dots<PER_WARP>(smem, warp, count, h, acc);
#pragma unroll
    for (int i = 0; i < PER_WARP; ++i)
        if (lane == 0 && i < count) qkv[r0 + warp + i * WARPS] = f2h(acc[i] + b[i]);
}

// rotate-half rotary of element d of the head vector at p (float16 in, float16-rounded float out)
__device__ __forceinline__ float rotated(const half_t* p, int d, float c, float s) {
    float partner = h2f(ld_cg_half(p + (d + HEAD_DIM / 2) % HEAD_DIM));
    partner = d < HEAD_DIM / 2 ? -partner : partner;
    return rh(h2f(ld_cg_half(p + d)) * c + partner * s);
}

__device__ void phase_attention(int layer, long long pos, const half_t* qkv, half_t* k_cache, half_t* v_cache,
                                float c, float s, half_t* out, float scale, char* smem) {
    const int head = blockIdx.x, kvh = head / GROUP, tid = threadIdx.x, warp = tid / 32, lane = tid & 31;
    float* qs = (float*)(smem + OFF_SCRATCH);  // q, new k, new v of this step (float16 values)
    float* ks = qs + HEAD_DIM;
    float* vs = ks + HEAD_DIM;
    float* part = vs + HEAD_DIM;  // per warp: m, l, acc[HEAD_DIM]
    const bool inside = pos < MAX_LEN;  // past the cache nothing is read or written (callers refuse it)
    const size_t base = ((size_t)layer * KV_HEADS + kvh) * MAX_LEN * HEAD_DIM;
    if (tid < HEAD_DIM) {
        const int d = tid;
        qs[d] = rotated(qkv + head * HEAD_DIM, d, c, s);
        ks[d] = rotated(qkv + (HEADS + kvh) * HEAD_DIM, d, c, s);
        vs[d] = h2f(ld_cg_half(qkv + (HEADS + KV_HEADS + kvh) * HEAD_DIM + d));
        if (head % GROUP == 0 && inside) {  // the group's writer; the group reads the new row from shared memory
            k_cache[base + pos * HEAD_DIM + d] = f2h(ks[d]);
            v_cache[base + pos * HEAD_DIM + d] = f2h(vs[d]);
        }
    }
    __syncthreads();
    STAMP(12);
    float m = NEG_INF, l = 0.f, acc[HEAD_DIM];
#pragma unroll
    for (int d = 0; d < HEAD_DIM; ++d) acc[d] = 0.f;
    const long long last = inside ? pos : -1;
    for (long long j = tid; j <= last; j += THREADS) {  // one key per thread at a time
        const uint4* kr = (const uint4*)(k_cache + base + j * HEAD_DIM);
        const uint4* vr = (const uint4*)(v_cache + base + j * HEAD_DIM);
        float score = 0.f;
#pragma unroll
        for (int c = 0; c < HEAD_DIM / 8; ++c) {
            float k[8];
            if (j == pos) {
#pragma unroll
                for (int e = 0; e < 8; ++e) k[e] = ks[c * 8 + e];
            } else {
                unpack8(kr[c], k);
            }
#pragma unroll
            for (int e = 0; e < 8; ++e) score += k[e] * qs[c * 8 + e];
        }
        score *= scale;
        const float m_new = fmaxf(m, score), alpha = __expf(m - m_new), p = __expf(score - m_new);
        l = l * alpha + p;
#pragma unroll
        for (int c = 0; c < HEAD_DIM / 8; ++c) {
            float v[8];
            if (j == pos) {
#pragma unroll
                for (int e = 0; e < 8; ++e) v[e] = vs[c * 8 + e];
            } else {
                unpack8(vr[c], v);
            }
#pragma unroll
            for (int e = 0; e < 8; ++e) acc[c * 8 + e] = acc[c * 8 + e] * alpha + p * v[e];
        }
        m = m_new;
    }
#pragma unroll
    for (int off = 16; off; off >>= 1) {  // merge the lanes' softmax states
        if (off == 16) STAMP(13);
        const float m_o = __shfl_xor_sync(0xffffffffu, m, off), l_o = __shfl_xor_sync(0xffffffffu, l, off);
        const float mm = fmaxf(m, m_o);
        const float a = m == NEG_INF ? 0.f : __expf(m - mm), b = m_o == NEG_INF ? 0.f : __expf(m_o - mm);
        l = l * a + l_o * b;
#pragma unroll
        for (int d = 0; d < HEAD_DIM; ++d) acc[d] = acc[d] * a + __shfl_xor_sync(0xffffffffu, acc[d], off) * b;
        m = mm;
    }
    STAMP(14);
    if (lane == 0) {
        float* w = part + warp * (HEAD_DIM + 2);
        w[0] = m;
        w[1] = l;
#pragma unroll
        for (int d = 0; d < HEAD_DIM; ++d) w[2 + d] = acc[d];
    }
    __syncthreads();
    if (tid < HEAD_DIM) {  // merge the warps'
        float mm = NEG_INF;
        for (int w = 0; w < WARPS; ++w) mm = fmaxf(mm, part[w * (HEAD_DIM + 2)]);
        float num = 0.f, den = 0.f;
        for (int w = 0; w < WARPS; ++w) {
            const float* pw = part + w * (HEAD_DIM + 2);
            const float e = pw[0] == NEG_INF ? 0.f : __expf(pw[0] - mm);
            den += pw[1] * e;
            num += pw[2 + tid] * e;
        }
        out[head * HEAD_DIM + tid] = f2h(inside ? num / den : 0.f);
    }
}

#ifdef ATTN_SPLIT
// ---- attention over every block: SPLITS blocks per query head, each over a contiguous range of keys; the last
// block of a head to finish merges the partial softmax states (ticket counter per head, only grows) --------------
#define SPLITS (BLOCKS / HEADS)
#if (MAX_LEN + SPLITS - 1) / SPLITS > THREADS
#error "ATTN_SPLIT takes at most one key per thread and block"
#endif
struct KeyRange { long long j0, j1; };
__device__ __forceinline__ KeyRange key_range(long long pos) {
    const long long keys = pos < MAX_LEN ? pos + 1 : 0;
    const long long per = (keys + SPLITS - 1) / SPLITS, j0 = (blockIdx.x % SPLITS) * per;
    return {j0, j0 + per < keys ? j0 + per : keys};
}
// this thread's first key row (rows below pos were written by earlier steps), loaded before barrier 1's wait
__device__ __forceinline__ void preload_key(int layer, long long pos, const half_t* k_cache, const half_t* v_cache,
                                            uint4 k[HEAD_DIM / 8]) {
    if (blockIdx.x >= HEADS * SPLITS) return;
    const KeyRange kr = key_range(pos);
    const long long j = kr.j0 + threadIdx.x;
    const size_t base = ((size_t)layer * KV_HEADS + (blockIdx.x / SPLITS) / GROUP) * MAX_LEN * HEAD_DIM;
    if (j < kr.j1 && j < pos) {
#pragma unroll
        for (int c = 0; c < HEAD_DIM / 8; ++c) k[c] = *((const uint4*)(k_cache + base + j * HEAD_DIM) + c);
        asm volatile("prefetch.global.L2 [%0];" ::"l"(v_cache + base + j * HEAD_DIM));
    }
}

__device__ __forceinline__ float block_reduce(float v, float* red, bool is_max) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
#pragma unroll
    for (int off = 16; off; off >>= 1) {
        const float o = __shfl_xor_sync(0xffffffffu, v, off);
        v = is_max ? fmaxf(v, o) : v + o;
    }
    __syncthreads();  // red may still be read from the previous reduction
    if (lane == 0) red[warp] = v;
    __syncthreads();
    v = red[0];
    for (int w = 1; w < WARPS; ++w) v = is_max ? fmaxf(v, red[w]) : v + red[w];
    return v;
}

__device__ void phase_attention_split(int layer, long long pos, const half_t* qkv, half_t* k_cache,
                                      half_t* v_cache, float c, float s, half_t* out, float scale, char* smem,
                                      const uint4 kpre[HEAD_DIM / 8], float* partials, u64* tickets) {
    if (blockIdx.x >= HEADS * SPLITS) return;
    const int head = blockIdx.x / SPLITS, split = blockIdx.x % SPLITS, kvh = head / GROUP, tid = threadIdx.x;
    float* qs = (float*)(smem + OFF_SCRATCH);
    float* ks = qs + HEAD_DIM;
    float* vs = ks + HEAD_DIM;
    float* ps = vs + HEAD_DIM;       // THREADS probabilities, then 4 x HEAD_DIM partial sums
    float* red = ps + THREADS;       // WARPS
    int* last = (int*)(red + WARPS);
    const bool inside = pos < MAX_LEN;
    const size_t base = ((size_t)layer * KV_HEADS + kvh) * MAX_LEN * HEAD_DIM;
    if (tid < HEAD_DIM) {
        const int d = tid;
        qs[d] = rotated(qkv + head * HEAD_DIM, d, c, s);
        ks[d] = rotated(qkv + (HEADS + kvh) * HEAD_DIM, d, c, s);
        vs[d] = h2f(ld_cg_half(qkv + (HEADS + KV_HEADS + kvh) * HEAD_DIM + d));
        if (head % GROUP == 0 && split == 0 && inside) {  // the group's writer (nobody reads row pos from memory)
            k_cache[base + pos * HEAD_DIM + d] = f2h(ks[d]);
            v_cache[base + pos * HEAD_DIM + d] = f2h(vs[d]);
        }
    }
    __syncthreads();
    STAMP(12);
    const KeyRange kr = key_range(pos);
    const long long nk = kr.j1 - kr.j0;
    float m = NEG_INF;
    for (long long i = tid; i < nk; i += THREADS) {  // scores (one pass for nk <= THREADS)
        const long long j = kr.j0 + i;
        float score = 0.f;
#pragma unroll
        for (int cc = 0; cc < HEAD_DIM / 8; ++cc) {
            float k[8];
            if (j == pos) {
#pragma unroll
                for (int e = 0; e < 8; ++e) k[e] = ks[cc * 8 + e];
            } else {
                unpack8(i == tid ? kpre[cc] : *((const uint4*)(k_cache + base + j * HEAD_DIM) + cc), k);
            }
#pragma unroll
            for (int e = 0; e < 8; ++e) score += k[e] * qs[cc * 8 + e];
        }
        score *= scale;
        if (i < THREADS) ps[i] = score;  // kept for the probabilities (nk > THREADS: recomputed below)
        m = fmaxf(m, score);
    }
    const float mx = block_reduce(m, red, true);
    float l = 0.f;
    for (long long i = tid; i < nk && i < THREADS; i += THREADS) {
        const float p = __expf(ps[i] - mx);
        ps[i] = p;
        l += p;
    }
    const float den = block_reduce(l, red, false);  // its __syncthreads also publish ps
    STAMP(13);
    // acc[d] = sum_i p_i v_i[d]: thread (d, quarter) over keys i = quarter, quarter + 4, ...
    const int d = tid % HEAD_DIM, quarter = tid / HEAD_DIM, quarters = THREADS / HEAD_DIM;
    float acc = 0.f;
    for (long long i = quarter; i < nk && i < THREADS; i += quarters) {
        const long long j = kr.j0 + i;
        const float v = j == pos ? vs[d] : h2f(v_cache[base + j * HEAD_DIM + d]);
        acc += ps[i] * v;
    }
    __syncthreads();
    ps[quarter * HEAD_DIM + d] = acc;
    __syncthreads();
    float* mine = partials + ((size_t)head * SPLITS + split) * (HEAD_DIM + 2);
    if (tid < HEAD_DIM) {
        float sum = 0.f;
        for (int q = 0; q < quarters; ++q) sum += ps[q * HEAD_DIM + tid];
        mine[2 + tid] = sum;
        if (tid == 0) { mine[0] = mx; mine[1] = den; }
    }
    __syncthreads();
    if (tid == 0) {
        __threadfence();
        const u64 ticket = atomicAdd((unsigned long long*)(tickets + head), 1ull);
        __threadfence();
        *last = ticket % SPLITS == SPLITS - 1;
    }
    __syncthreads();
    STAMP(14);
    if (*last && tid < HEAD_DIM) {  // merge the head's SPLITS partial states
        const float* all = partials + (size_t)head * SPLITS * (HEAD_DIM + 2);
        float mm = NEG_INF;
        for (int q = 0; q < SPLITS; ++q) mm = fmaxf(mm, __ldcg(all + q * (HEAD_DIM + 2)));
        float num = 0.f, tot = 0.f;
        for (int q = 0; q < SPLITS; ++q) {
            const float mq = __ldcg(all + q * (HEAD_DIM + 2));
            const float e = mq == NEG_INF ? 0.f : __expf(mq - mm);
            tot += __ldcg(all + q * (HEAD_DIM + 2) + 1) * e;
            num += __ldcg(all + q * (HEAD_DIM + 2) + 2 + tid) * e;
        }
        out[head * HEAD_DIM + tid] = f2h(inside ? num / tot : 0.f);
    }
}
#endif

// the head's cache rows below pos (written by earlier steps) fetched into L2 before the q/k/v are awaited
__device__ __forceinline__ void prefetch_keys(int layer, long long pos, const half_t* k_cache, const half_t* v_cache) {
    const size_t base = ((size_t)layer * KV_HEADS + blockIdx.x / GROUP) * MAX_LEN * HEAD_DIM;
    const long long last = pos < MAX_LEN ? pos : 0;
    for (long long j = threadIdx.x; j < last; j += THREADS) {
        asm volatile("prefetch.global.L2 [%0];" ::"l"(k_cache + base + j * HEAD_DIM));
        asm volatile("prefetch.global.L2 [%0];" ::"l"(v_cache + base + j * HEAD_DIM));
    }
}

// a small weight vector fetched into L2 before a barrier's wait (the weight stream evicts it every layer)
__device__ __forceinline__ void prefetch_vector(const void* p, int bytes) {
#ifdef PREFETCH_NORMS
    for (int off = threadIdx.x * 128; off < bytes; off += THREADS * 128)
        asm volatile("prefetch.global.L2 [%0];" ::"l"((const char*)p + off));
#endif
}

__device__ void phase_output(const half_t* attn, half_t* x, const char* smem) {
    const int n = rows_of(HIDDEN, ROWS_O), warp = threadIdx.x / 32, lane = threadIdx.x & 31;
    if (warp >= n) return;
    const int r0 = blockIdx.x * ROWS_O;
    constexpr int PER_WARP = (ROWS_O + WARPS - 1) / WARPS;
    float res[PER_WARP], acc[PER_WARP];
#pragma unroll
    for (int i = 0; i < PER_WARP; ++i)  // the residual rows with the input, one round trip
        res[i] = warp + i * WARPS < n ? h2f(ld_cg_half(x + r0 + warp + i * WARPS)) : 0.f;
    float a[LANE_VH][8];
    lane_share(attn, a);
    const int count = (n - warp + WARPS - 1) / WARPS;
    row_dots<PER_WARP>(smem + OFF_O, warp, count, a, acc);
#pragma unroll
    for (int i = 0; i < PER_WARP; ++i)
        if (lane == 0 && i < count) x[r0 + warp + i * WARPS] = f2h(res[i] + rh(acc[i]));
}

__device__ void phase_gate_up(const u64* layer, const half_t* x, half_t* act, float eps, const char* smem) {
    const int n = rows_of(INNER, ROWS_GU), warp = threadIdx.x / 32, lane = threadIdx.x & 31;
    if (warp >= n) return;
    float h[LANE_VH][8];
    normed(x, (const half_t*)layer[LN2], eps, h);
    STAMP(16);
    const int r0 = blockIdx.x * ROWS_GU;
    constexpr int PER_WARP = (ROWS_GU + WARPS - 1) / WARPS;
    const int count = (n - warp + WARPS - 1) / WARPS;
    float gates[PER_WARP], ups[PER_WARP];
    row_dots<PER_WARP>(smem + OFF_GU, warp, count, h, gates);
    row_dots<PER_WARP>(smem + OFF_GU + ROWS_GU * HIDDEN * 2, warp, count, h, ups);
#pragma unroll
    for (int i = 0; i < PER_WARP; ++i) {
        float gate = rh(gates[i]);
        gate = rh(gate / (1.f + __expf(-gate)));
        if (lane == 0 && i < count) act[r0 + warp + i * WARPS] = f2h(gate * rh(ups[i]));
    }
}

__device__ void phase_down(const half_t* act, half_t* x, char* smem) {
    const int n = rows_of(HIDDEN, ROWS_DOWN), tid = threadIdx.x, warp = tid / 32, lane = tid & 31;
    float acc[ROWS_DOWN];
#pragma unroll
    for (int r = 0; r < ROWS_DOWN; ++r) acc[r] = 0.f;
    const uint4* w = (const uint4*)(smem + OFF_DOWN);
    constexpr int PER_THREAD = (VI + THREADS - 1) / THREADS;  // the reduction split over the whole block
    const int row = blockIdx.x * ROWS_DOWN + tid;
    const float res = tid < n ? h2f(ld_cg_half(x + row)) : 0.f;  // with the activations, one round trip
    uint4 loaded[PER_THREAD];
#pragma unroll
    for (int j = 0; j < PER_THREAD; ++j) {  // all the activation loads in flight at once
        const int v = tid + j * THREADS;
        if (v < VI) loaded[j] = ld_cg4(act + v * 8);
    }
#pragma unroll
    for (int j = 0; j < PER_THREAD; ++j) {
        const int v = tid + j * THREADS;
        if (v >= VI) break;
        float a[8];
        unpack8(loaded[j], a);
#pragma unroll
        for (int r = 0; r < ROWS_DOWN; ++r) {
            if (r < n) {
                float wr[8];
                unpack8(w[r * VI + v], wr);
#pragma unroll
                for (int e = 0; e < 8; ++e) acc[r] += wr[e] * a[e];
            }
        }
    }
    STAMP(18);
    float* red = (float*)(smem + OFF_SCRATCH);
#pragma unroll
    for (int r = 0; r < ROWS_DOWN; ++r) {
        const float s = warp_sum(acc[r]);
        if (lane == 0) red[warp * ROWS_DOWN + r] = s;
    }
    __syncthreads();
    if (tid < n) {
        float s = 0.f;
        for (int i = 0; i < WARPS; ++i) s += red[i * ROWS_DOWN + tid];
        x[row] = f2h(res + rh(s));
    }
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
qwen_decode_layers(const u64* __restrict__ weights, half_t* x, half_t* qkv, half_t* attn, half_t* act,
                   half_t* k_cache, half_t* v_cache, const float* cos_t, const float* sin_t,
                   const long long* position, u64* barrier, double eps_d, double scale_d) {
    extern __shared__ __align__(16) char smem[];
    const float eps = (float)eps_d, scale = (float)scale_d;
    const long long pos = *position;
    // this step's rotary row, for the threads that rotate (the same in every layer)
    const bool rotates = threadIdx.x < HEAD_DIM && pos < MAX_LEN;
    const float rot_c = rotates ? cos_t[pos * HEAD_DIM + threadIdx.x] : 0.f;
    const float rot_s = rotates ? sin_t[pos * HEAD_DIM + threadIdx.x] : 0.f;
#if PROBE_MODE == 1  // timing probe: the barriers alone
    for (int i = 0; i < 5 * LAYERS - 1; ++i) grid_sync(barrier);
    return;
#endif
#if (PROBE_MODE >= 2 && PROBE_MODE != 4) || defined(PROBE_MODE_NB)  // timing probe: no barriers (wrong results)
#define grid_sync(c) __syncthreads()
#define grid_arrive(c) (__syncthreads(), 0ull)
#define grid_wait(c, t) __syncthreads()
#endif
#if PROBE_MODE == 4  // timing probe: no weight stream after layer 0 (each layer reuses layer 0's slices)
#define issue_slice(p, layer_ptr, sm) do { if ((layer_ptr) == weights) issue_slice_real(p, layer_ptr, sm); else fake_slice(p, sm); } while (0)
#endif
#if PROBE_MODE == 3  // timing probe: the weight copies alone (no barriers, no phase math)
#define phase_qkv(...) ((void)0)
#define phase_attention(...) ((void)0)
#define phase_output(...) ((void)0)
#define phase_gate_up(...) ((void)0)
#define phase_down(...) ((void)0)
#endif
#if PROBE_TIMES
    u64* stamps = barrier + BLOCKS + (size_t)blockIdx.x * NSTAMPS * LAYERS;
#endif
    init_slices(smem);
    for (int phase = 0; phase < 4; ++phase) issue_slice(phase, weights, smem);
    for (int layer = 0; layer < LAYERS; ++layer) {
        const u64* w = weights + layer * PER_LAYER;
        const u64* next = layer + 1 < LAYERS ? w + PER_LAYER : nullptr;
        // after each weighted phase its slice of the next layer is issued (cp.async: an empty group after the
        // last layer, so that the slice needed is always the 4th-newest group), between arriving and waiting
        u64 t;
#if PROBE_TIMES
        if (threadIdx.x == 0) stamp_row = stamps + layer * NSTAMPS;
#endif
        STAMP(0);
        wait_phase_slice(0, layer, smem);
        STAMP(10);
        phase_qkv(w, x, qkv, eps, smem);
        STAMP(1);
        t = grid_arrive(barrier);
        if (next) issue_slice(0, next, smem); else commit();
#ifdef ATTN_SPLIT
        uint4 kpre[HEAD_DIM / 8];
        preload_key(layer, pos, k_cache, v_cache, kpre);
        grid_wait(barrier, t);
        STAMP(2);
        phase_attention_split(layer, pos, qkv, k_cache, v_cache, rot_c, rot_s, attn, scale, smem, kpre,
                              (float*)(barrier + BLOCKS * (1 + NSTAMPS * LAYERS)), barrier + 16);
#else
        if (blockIdx.x < HEADS) prefetch_keys(layer, pos, k_cache, v_cache);
        grid_wait(barrier, t);
        STAMP(2);
        if (blockIdx.x < HEADS) phase_attention(layer, pos, qkv, k_cache, v_cache, rot_c, rot_s, attn, scale, smem);
#endif
        STAMP(3);
        grid_sync(barrier);
        STAMP(4);
        wait_phase_slice(1, layer, smem);
        phase_output(attn, x, smem);
        STAMP(5);
        t = grid_arrive(barrier);
        if (next) issue_slice(1, next, smem); else commit();
        prefetch_vector((const void*)w[LN2], HIDDEN * 2);
        grid_wait(barrier, t);
        STAMP(6);
        wait_phase_slice(2, layer, smem);
        STAMP(15);
        phase_gate_up(w, x, act, eps, smem);
        STAMP(7);
        t = grid_arrive(barrier);
        if (next) issue_slice(2, next, smem); else commit();
        grid_wait(barrier, t);
        STAMP(8);
        wait_phase_slice(3, layer, smem);
        STAMP(17);
        phase_down(act, x, smem);
        STAMP(9);
        if (next) {
            t = grid_arrive(barrier);
            issue_slice(3, next, smem);
            prefetch_vector((const void*)next[LN1], HIDDEN * 2);
            prefetch_vector((const void*)(next[B_QKV] + (size_t)blockIdx.x * ROWS_QKV * 2), ROWS_QKV * 2);
            grid_wait(barrier, t);
        } else {
            commit();
        }
    }
#ifndef USE_TMA
    asm volatile("cp.async.wait_all;" ::: "memory");
#endif
}
