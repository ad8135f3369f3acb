/* A small convolutional network on the 8x8 digit images, the third workload of
 * program-edit evolution (docs/gevo.md): a 3x3 convolution of CNN_FILTERS
 * filters (no padding: 6x6 each), ReLU, 2x2 max pooling (3x3 each), then a
 * fully connected layer of 10 outputs with softmax. Compiled by clang-14 to
 * LLVM IR at build time; edits are applied to that IR. The entries have the
 * signature of 2fcNet's (fcnet.c) that the kernel worker's program mode calls:
 *
 *   entry(x, y, n_train, n_test, params, scores)
 *
 * x: (n_train + n_test) x 64 pixels in [0, 1], the training images then the
 * images to predict; y: the n_train training labels for training, a null
 * pointer for prediction; params: CNN_PARAMS floats (conv weights, conv
 * biases, fc weights, fc biases); scores: n_test x 10 outputs for the images
 * x[n_train ..]. */

#define CNN_FILTERS 4
#define CNN_CONV (6 * 6)
#define CNN_POOLED (3 * 3)
#define CNN_FEATURES (CNN_FILTERS * CNN_POOLED)
#define CNN_OUT 10
#define CNN_PARAMS (CNN_FILTERS * 9 + CNN_FILTERS + CNN_FEATURES * CNN_OUT + CNN_OUT)
#define CNN_EPOCHS 6
#define CNN_BATCH 16

static float cnn_exp(float v) { return __builtin_expf(v); }

/* Forward pass of one image: the convolution after ReLU, the pooled
 * features, which convolution output each pooled one came from, and the
 * softmax probabilities. */
static void cnn_forward(const float* params, const float* x, float* conv, float* pooled, int* argmax, float* out) {
  const float* wc = params;
  const float* bc = wc + CNN_FILTERS * 9;
  const float* wf = bc + CNN_FILTERS;
  const float* bf = wf + CNN_FEATURES * CNN_OUT;
  for (int f = 0; f < CNN_FILTERS; ++f)
    for (int r = 0; r < 6; ++r)
      for (int c = 0; c < 6; ++c) {
        float sum = bc[f];
        for (int i = 0; i < 3; ++i)
          for (int j = 0; j < 3; ++j) sum += wc[f * 9 + i * 3 + j] * x[(r + i) * 8 + c + j];
        conv[f * CNN_CONV + r * 6 + c] = sum > 0.0f ? sum : 0.0f;
      }
  for (int f = 0; f < CNN_FILTERS; ++f)
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 3; ++c) {
        int best = f * CNN_CONV + 2 * r * 6 + 2 * c;
        for (int i = 0; i < 2; ++i)
          for (int j = 0; j < 2; ++j) {
            int at = f * CNN_CONV + (2 * r + i) * 6 + 2 * c + j;
            if (conv[at] > conv[best]) best = at;
          }
        pooled[f * CNN_POOLED + r * 3 + c] = conv[best];
        argmax[f * CNN_POOLED + r * 3 + c] = best;
      }
  float top = -1e30f;
  for (int o = 0; o < CNN_OUT; ++o) {
    float sum = bf[o];
    for (int k = 0; k < CNN_FEATURES; ++k) sum += wf[o * CNN_FEATURES + k] * pooled[k];
    out[o] = sum;
    if (sum > top) top = sum;
  }
  float total = 0.0f;
  for (int o = 0; o < CNN_OUT; ++o) {
    out[o] = cnn_exp(out[o] - top);
    total += out[o];
  }
  for (int o = 0; o < CNN_OUT; ++o) out[o] /= total;
}

static void cnn_predict_all(const float* params, const float* x, int n, float* scores) {
  float conv[CNN_FILTERS * CNN_CONV];
  float pooled[CNN_FEATURES];
  int argmax[CNN_FEATURES];
  for (int k = 0; k < n; ++k) cnn_forward(params, x + k * 64, conv, pooled, argmax, scores + k * CNN_OUT);
}

/* Prediction: the images to predict with the given parameters. */
void cnn_predict(const float* x, const int* y, int n_train, int n_test, float* params, float* scores) {
  (void)y;
  cnn_predict_all(params, x + n_train * 64, n_test, scores);
}

/* A fixed pseudo-random stream (xorshift32) for the initial weights. */
static unsigned cnn_next(unsigned* state) {
  unsigned s = *state;
  s ^= s << 13;
  s ^= s >> 17;
  s ^= s << 5;
  *state = s;
  return s;
}

/* Training: weights from a fixed seed, CNN_EPOCHS epochs of mini-batch SGD
 * (cross-entropy, batch CNN_BATCH, learning rate 0.3, the gradient averaged
 * over the batch), then prediction of the images after the training ones. */
void cnn_train(const float* x, const int* y, int n_train, int n_test, float* params, float* scores) {
  unsigned state = 2463534242u;
  for (int p = 0; p < CNN_PARAMS; ++p) {
    float u = (float)(cnn_next(&state) >> 8) / 16777216.0f;
    params[p] = (u - 0.5f) * 0.5f;
  }
  float grad[CNN_PARAMS];
  float conv[CNN_FILTERS * CNN_CONV];
  float pooled[CNN_FEATURES];
  int argmax[CNN_FEATURES];
  float out[CNN_OUT];
  float delta_pooled[CNN_FEATURES];
  const float rate = 0.3f;
  const float* wf = params + CNN_FILTERS * 9 + CNN_FILTERS;
  for (int epoch = 0; epoch < CNN_EPOCHS; ++epoch) {
    for (int start = 0; start < n_train; start += CNN_BATCH) {
      int end = start + CNN_BATCH < n_train ? start + CNN_BATCH : n_train;
      for (int p = 0; p < CNN_PARAMS; ++p) grad[p] = 0.0f;
      float* g_wc = grad;
      float* g_bc = g_wc + CNN_FILTERS * 9;
      float* g_wf = g_bc + CNN_FILTERS;
      float* g_bf = g_wf + CNN_FEATURES * CNN_OUT;
      for (int k = start; k < end; ++k) {
        const float* xk = x + k * 64;
        cnn_forward(params, xk, conv, pooled, argmax, out);
        for (int q = 0; q < CNN_FEATURES; ++q) delta_pooled[q] = 0.0f;
        for (int o = 0; o < CNN_OUT; ++o) {
          float d = out[o] - (y[k] == o ? 1.0f : 0.0f);
          g_bf[o] += d;
          for (int q = 0; q < CNN_FEATURES; ++q) {
            g_wf[o * CNN_FEATURES + q] += d * pooled[q];
            delta_pooled[q] += d * wf[o * CNN_FEATURES + q];
          }
        }
        /* Back through the pooling (to the maximum) and the ReLU. */
        for (int q = 0; q < CNN_FEATURES; ++q) {
          int at = argmax[q];
          if (conv[at] <= 0.0f) continue;
          int f = at / CNN_CONV, r = (at % CNN_CONV) / 6, c = at % 6;
          g_bc[f] += delta_pooled[q];
          for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j) g_wc[f * 9 + i * 3 + j] += delta_pooled[q] * xk[(r + i) * 8 + c + j];
        }
      }
      float scale = rate / (float)(end - start);
      for (int p = 0; p < CNN_PARAMS; ++p) params[p] -= scale * grad[p];
    }
  }
  cnn_predict_all(params, x + n_train * 64, n_test, scores);
}
