// CPU backend: OpenBLAS for matrix products, plain loops for the rest.
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "math/kernels.h"

namespace loom::train::math {

void setThreads(int threads) { openblas_set_num_threads(std::max(1, threads)); }

void gemm(bool transA, bool transB, int M, int N, int K, float alpha, const float* A, int lda,
          const float* B, int ldb, float beta, float* C, int ldc) {
  if (M == 0 || N == 0) return;
  cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, transB ? CblasTrans : CblasNoTrans,
              M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void addRowVector(float* x, const float* v, int rows, int cols) {
  for (int r = 0; r < rows; ++r) {
    float* row = x + static_cast<size_t>(r) * cols;
    for (int c = 0; c < cols; ++c) row[c] += v[c];
  }
}

void accumulateColumnSums(const float* x, int rows, int cols, float* sums) {
  for (int r = 0; r < rows; ++r) {
    const float* row = x + static_cast<size_t>(r) * cols;
    for (int c = 0; c < cols; ++c) sums[c] += row[c];
  }
}

void add(const float* a, const float* b, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

constexpr float kLayerNormEps = 1e-5f;

void layerNormForward(const float* x, const float* gamma, const float* beta, int rows, int cols,
                      float* y, float* mean, float* rstd) {
  for (int r = 0; r < rows; ++r) {
    const float* in = x + static_cast<size_t>(r) * cols;
    float* out = y + static_cast<size_t>(r) * cols;
    double sum = 0;
    for (int c = 0; c < cols; ++c) sum += in[c];
    const float mu = static_cast<float>(sum / cols);
    double var = 0;
    for (int c = 0; c < cols; ++c) var += double(in[c] - mu) * (in[c] - mu);
    const float rs = 1.0f / std::sqrt(static_cast<float>(var / cols) + kLayerNormEps);
    for (int c = 0; c < cols; ++c) out[c] = (in[c] - mu) * rs * gamma[c] + beta[c];
    mean[r] = mu;
    rstd[r] = rs;
  }
}

void layerNormBackward(const float* dy, const float* x, const float* gamma, const float* mean,
                       const float* rstd, int rows, int cols, float* dx, float* dgamma,
                       float* dbeta) {
  for (int r = 0; r < rows; ++r) {
    const float* g = dy + static_cast<size_t>(r) * cols;
    const float* in = x + static_cast<size_t>(r) * cols;
    float* d = dx + static_cast<size_t>(r) * cols;
    const float mu = mean[r];
    const float rs = rstd[r];
    // With xhat = (x - mu) * rs and g' = dy * gamma:
    // dx = rs * (g' - mean(g') - xhat * mean(g' * xhat)).
    double meanG = 0, meanGX = 0;
    for (int c = 0; c < cols; ++c) {
      const float xhat = (in[c] - mu) * rs;
      const float gg = g[c] * gamma[c];
      meanG += gg;
      meanGX += double(gg) * xhat;
      dgamma[c] += g[c] * xhat;
      dbeta[c] += g[c];
    }
    const float mg = static_cast<float>(meanG / cols);
    const float mgx = static_cast<float>(meanGX / cols);
    for (int c = 0; c < cols; ++c) {
      const float xhat = (in[c] - mu) * rs;
      d[c] += rs * (g[c] * gamma[c] - mg - xhat * mgx);
    }
  }
}

constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kGeluCubic = 0.044715f;

void geluForward(const float* x, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const float v = x[i];
    y[i] = 0.5f * v * (1.0f + std::tanh(kGeluScale * (v + kGeluCubic * v * v * v)));
  }
}

void geluBackward(const float* x, const float* dy, float* dx, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float t = std::tanh(kGeluScale * (v + kGeluCubic * v * v * v));
    const float dInner = kGeluScale * (1.0f + 3.0f * kGeluCubic * v * v);
    dx[i] = dy[i] * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * dInner);
  }
}

void embeddingForward(const int32_t* tokens, const float* wte, const float* wpe, int batch, int seq,
                      int channels, float* out) {
  for (int b = 0; b < batch; ++b) {
    for (int t = 0; t < seq; ++t) {
      const size_t row = static_cast<size_t>(b) * seq + t;
      const float* tok = wte + static_cast<size_t>(tokens[row]) * channels;
      const float* pos = wpe + static_cast<size_t>(t) * channels;
      float* o = out + row * channels;
      for (int c = 0; c < channels; ++c) o[c] = tok[c] + pos[c];
    }
  }
}

void embeddingBackward(const float* dout, const int32_t* tokens, int batch, int seq, int channels,
                       float* dwte, float* dwpe) {
  for (int b = 0; b < batch; ++b) {
    for (int t = 0; t < seq; ++t) {
      const size_t row = static_cast<size_t>(b) * seq + t;
      const float* d = dout + row * channels;
      float* tok = dwte + static_cast<size_t>(tokens[row]) * channels;
      float* pos = dwpe + static_cast<size_t>(t) * channels;
      for (int c = 0; c < channels; ++c) {
        tok[c] += d[c];
        pos[c] += d[c];
      }
    }
  }
}

namespace {

// Pointers to one (batch, head) slice of the packed qkv layout.
struct HeadView {
  size_t rowStride;
  size_t q, k, v, out;
};

HeadView headView(const AttentionShape& s, int b, int h) {
  const size_t width = static_cast<size_t>(s.heads) * s.headDim;
  const size_t base = static_cast<size_t>(b) * s.seq;
  HeadView view;
  view.rowStride = 3 * width;
  view.q = base * view.rowStride + static_cast<size_t>(h) * s.headDim;
  view.k = view.q + width;
  view.v = view.q + 2 * width;
  view.out = base * width + static_cast<size_t>(h) * s.headDim;
  return view;
}

}  // namespace

void attentionForward(const AttentionShape& s, const float* qkv, float* probs, float* out) {
  const int T = s.seq;
  const int hd = s.headDim;
  const int outStride = s.heads * hd;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  for (int b = 0; b < s.batch; ++b) {
    for (int h = 0; h < s.heads; ++h) {
      const HeadView v = headView(s, b, h);
      const int ld = static_cast<int>(v.rowStride);
      float* p = probs + (static_cast<size_t>(b) * s.heads + h) * T * T;
      gemm(false, true, T, T, hd, scale, qkv + v.q, ld, qkv + v.k, ld, 0.0f, p, T);
      for (int i = 0; i < T; ++i) {
        float* row = p + static_cast<size_t>(i) * T;
        float maxv = row[0];
        for (int j = 1; j <= i; ++j) maxv = std::max(maxv, row[j]);
        double sum = 0;
        for (int j = 0; j <= i; ++j) {
          row[j] = std::exp(row[j] - maxv);
          sum += row[j];
        }
        const float inv = static_cast<float>(1.0 / sum);
        for (int j = 0; j <= i; ++j) row[j] *= inv;
        for (int j = i + 1; j < T; ++j) row[j] = 0.0f;  // causal: no looking ahead
      }
      gemm(false, false, T, hd, T, 1.0f, p, T, qkv + v.v, ld, 0.0f, out + v.out, outStride);
    }
  }
}

void attentionBackward(const AttentionShape& s, const float* qkv, const float* probs,
                       const float* dout, float* dqkv) {
  const int T = s.seq;
  const int hd = s.headDim;
  const int outStride = s.heads * hd;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  std::vector<float> dscores(static_cast<size_t>(T) * T);
  for (int b = 0; b < s.batch; ++b) {
    for (int h = 0; h < s.heads; ++h) {
      const HeadView v = headView(s, b, h);
      const int ld = static_cast<int>(v.rowStride);
      const float* p = probs + (static_cast<size_t>(b) * s.heads + h) * T * T;
      const float* dO = dout + v.out;
      // dV = P^T dO, dP = dO V^T.
      gemm(true, false, T, hd, T, 1.0f, p, T, dO, outStride, 0.0f, dqkv + v.v, ld);
      gemm(false, true, T, T, hd, 1.0f, dO, outStride, qkv + v.v, ld, 0.0f, dscores.data(), T);
      // Softmax backward per row: dS = P * (dP - sum_j P dP).
      for (int i = 0; i < T; ++i) {
        const float* prow = p + static_cast<size_t>(i) * T;
        float* drow = dscores.data() + static_cast<size_t>(i) * T;
        double dot = 0;
        for (int j = 0; j <= i; ++j) dot += double(prow[j]) * drow[j];
        for (int j = 0; j <= i; ++j) drow[j] = prow[j] * (drow[j] - static_cast<float>(dot));
        for (int j = i + 1; j < T; ++j) drow[j] = 0.0f;
      }
      // dQ = dS K * scale, dK = dS^T Q * scale.
      gemm(false, false, T, hd, T, scale, dscores.data(), T, qkv + v.k, ld, 0.0f, dqkv + v.q, ld);
      gemm(true, false, T, hd, T, scale, dscores.data(), T, qkv + v.q, ld, 0.0f, dqkv + v.k, ld);
    }
  }
}

double crossEntropy(const float* logits, const int32_t* targets, int rows, int vocab,
                    float gradScale, float* dlogits) {
  double total = 0;
  for (int r = 0; r < rows; ++r) {
    const float* row = logits + static_cast<size_t>(r) * vocab;
    float* drow = dlogits + static_cast<size_t>(r) * vocab;
    const float maxv = *std::max_element(row, row + vocab);
    const float targetLogit = row[targets[r]];  // read before dlogits may overwrite it
    double sum = 0;
    for (int j = 0; j < vocab; ++j) {
      drow[j] = std::exp(row[j] - maxv);
      sum += drow[j];
    }
    total += std::log(sum) + maxv - targetLogit;
    const float inv = static_cast<float>(1.0 / sum);
    for (int j = 0; j < vocab; ++j) drow[j] *= inv * gradScale;
    drow[targets[r]] -= gradScale;
  }
  return total;
}

double sumSquares(const float* x, size_t n) {
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += double(x[i]) * x[i];
  return sum;
}

}  // namespace loom::train::math
