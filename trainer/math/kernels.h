// The math backend seam. Every floating-point loop the model needs is declared
// here and implemented once per backend: kernels_cpu.cc (OpenBLAS + loops) today,
// a CUDA file with the same declarations (cuBLAS + kernels) later. Layers only
// manage buffers and call these, so swapping the backend touches no layer.
//
// All matrices are row-major fp32. Functions named *Backward accumulate into
// parameter gradients (+=) because micro-batches add up; activation gradients
// are written unless the comment says otherwise.
#pragma once

#include <cstddef>
#include <cstdint>

namespace loom::train::math {

/// How many threads the backend may use inside one call (1 when ranks share cores).
void setThreads(int threads);

/// C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C, op = transpose when asked.
void gemm(bool transA, bool transB, int M, int N, int K, float alpha, const float* A, int lda,
          const float* B, int ldb, float beta, float* C, int ldc);

/// x[r, :] += v for every row r.
void addRowVector(float* x, const float* v, int rows, int cols);
/// sums[c] += sum over rows of x[r, c] (a bias gradient).
void accumulateColumnSums(const float* x, int rows, int cols, float* sums);
/// out[i] = a[i] + b[i] (out may alias a or b).
void add(const float* a, const float* b, float* out, size_t n);

/// y = (x - mean) * rstd * gamma + beta per row; keeps mean and rstd (one per row).
void layerNormForward(const float* x, const float* gamma, const float* beta, int rows, int cols,
                      float* y, float* mean, float* rstd);
/// dx += d/dx; dgamma, dbeta accumulate.
void layerNormBackward(const float* dy, const float* x, const float* gamma, const float* mean,
                       const float* rstd, int rows, int cols, float* dx, float* dgamma,
                       float* dbeta);

/// GELU, tanh approximation.
void geluForward(const float* x, float* y, size_t n);
/// dx = dy * gelu'(x).
void geluBackward(const float* x, const float* dy, float* dx, size_t n);

/// Token + position embedding: out[b*T + t] = wte[tokens[b*T + t]] + wpe[t].
void embeddingForward(const int32_t* tokens, const float* wte, const float* wpe, int batch, int seq,
                      int channels, float* out);
/// Scatter-adds dout into dwte (by token) and dwpe (by position).
void embeddingBackward(const float* dout, const int32_t* tokens, int batch, int seq, int channels,
                       float* dwte, float* dwpe);

/// Causal self-attention over `heads` heads of `headDim`. qkv rows hold
/// [Q heads | K heads | V heads] for one token (row stride 3 * heads * headDim).
struct AttentionShape {
  int batch = 0;
  int seq = 0;
  int heads = 0;
  int headDim = 0;
};
/// probs: [batch, heads, seq, seq] softmax weights (kept for backward);
/// out: [batch * seq, heads * headDim].
void attentionForward(const AttentionShape& shape, const float* qkv, float* probs, float* out);
/// Writes dqkv (same layout as qkv) from dout.
void attentionBackward(const AttentionShape& shape, const float* qkv, const float* probs,
                       const float* dout, float* dqkv);

/// Softmax cross-entropy per row. Returns the summed loss (double, so a large
/// batch does not lose digits); writes dlogits = (softmax - onehot) * gradScale;
/// dlogits may alias logits.
double crossEntropy(const float* logits, const int32_t* targets, int rows, int vocab,
                    float gradScale, float* dlogits);

/// Sum of squares of x[0..n) in double.
double sumSquares(const float* x, size_t n);

}  // namespace loom::train::math
