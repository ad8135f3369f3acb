/* 2fcNet: a two-layer fully connected network (64 inputs, 32 hidden units
 * with ReLU, 10 outputs with softmax) on 8x8 digit images, the workload of
 * program-edit evolution (docs/gevo.md). Compiled by clang-14 to LLVM IR at
 * build time; edits are applied to that IR. Both entries have the signature
 * the kernel worker's program mode calls:
 *
 *   entry(x, y, n_train, n_test, params, scores)
 *
 * x: (n_train + n_test) x 64 pixels scaled to [0, 1], the training images
 * then the images to predict; y: the n_train training labels for training, a
 * null pointer for prediction (the labels of the images it predicts are never
 * given: the engine scores the predictions); params: FCNET_PARAMS floats (w1,
 * b1, w2, b2); scores: n_test x 10 outputs for the images x[n_train ..]. The
 * worker refuses non-finite scores. */

#define FCNET_IN 64
#define FCNET_HIDDEN 32
#define FCNET_OUT 10
#define FCNET_PARAMS (FCNET_IN * FCNET_HIDDEN + FCNET_HIDDEN + FCNET_HIDDEN * FCNET_OUT + FCNET_OUT)
#define FCNET_EPOCHS 4
#define FCNET_BATCH 16

static float fcnet_exp(float v) { return __builtin_expf(v); }

/* Forward pass of one image: hidden activations and softmax probabilities. */
static void fcnet_forward(const float* params, const float* x, float* hidden, float* out) {
  const float* w1 = params;
  const float* b1 = w1 + FCNET_IN * FCNET_HIDDEN;
  const float* w2 = b1 + FCNET_HIDDEN;
  const float* b2 = w2 + FCNET_HIDDEN * FCNET_OUT;
  for (int h = 0; h < FCNET_HIDDEN; ++h) {
    float sum = b1[h];
    for (int i = 0; i < FCNET_IN; ++i) sum += w1[h * FCNET_IN + i] * x[i];
    hidden[h] = sum > 0.0f ? sum : 0.0f;
  }
  float top = -1e30f;
  for (int o = 0; o < FCNET_OUT; ++o) {
    float sum = b2[o];
    for (int h = 0; h < FCNET_HIDDEN; ++h) sum += w2[o * FCNET_HIDDEN + h] * hidden[h];
    out[o] = sum;
    if (sum > top) top = sum;
  }
  float total = 0.0f;
  for (int o = 0; o < FCNET_OUT; ++o) {
    out[o] = fcnet_exp(out[o] - top);
    total += out[o];
  }
  for (int o = 0; o < FCNET_OUT; ++o) out[o] /= total;
}

static void fcnet_predict_all(const float* params, const float* x, int n, float* scores) {
  float hidden[FCNET_HIDDEN];
  for (int k = 0; k < n; ++k) fcnet_forward(params, x + k * FCNET_IN, hidden, scores + k * FCNET_OUT);
}

/* Prediction: the images to predict with the given parameters. */
void fcnet_predict(const float* x, const int* y, int n_train, int n_test, float* params, float* scores) {
  (void)y;
  fcnet_predict_all(params, x + n_train * FCNET_IN, n_test, scores);
}

/* A fixed pseudo-random stream (xorshift32) for the initial weights. */
static unsigned fcnet_next(unsigned* state) {
  unsigned s = *state;
  s ^= s << 13;
  s ^= s >> 17;
  s ^= s << 5;
  *state = s;
  return s;
}

/* Training: weights from a fixed seed, FCNET_EPOCHS epochs of mini-batch SGD
 * (cross-entropy, batch FCNET_BATCH, learning rate 0.5, the gradient averaged
 * over the batch), then prediction of the images after the training ones. */
void fcnet_train(const float* x, const int* y, int n_train, int n_test, float* params, float* scores) {
  unsigned state = 2463534242u;
  for (int p = 0; p < FCNET_PARAMS; ++p) {
    float u = (float)(fcnet_next(&state) >> 8) / 16777216.0f;
    params[p] = (u - 0.5f) * 0.25f;
  }
  float grad[FCNET_PARAMS];
  float hidden[FCNET_HIDDEN];
  float out[FCNET_OUT];
  float delta_hidden[FCNET_HIDDEN];
  const float rate = 0.5f;
  for (int epoch = 0; epoch < FCNET_EPOCHS; ++epoch) {
    for (int start = 0; start < n_train; start += FCNET_BATCH) {
      int end = start + FCNET_BATCH < n_train ? start + FCNET_BATCH : n_train;
      for (int p = 0; p < FCNET_PARAMS; ++p) grad[p] = 0.0f;
      float* g_w1 = grad;
      float* g_b1 = g_w1 + FCNET_IN * FCNET_HIDDEN;
      float* g_w2 = g_b1 + FCNET_HIDDEN;
      float* g_b2 = g_w2 + FCNET_HIDDEN * FCNET_OUT;
      const float* w2 = params + FCNET_IN * FCNET_HIDDEN + FCNET_HIDDEN;
      for (int k = start; k < end; ++k) {
        const float* xk = x + k * FCNET_IN;
        fcnet_forward(params, xk, hidden, out);
        for (int h = 0; h < FCNET_HIDDEN; ++h) delta_hidden[h] = 0.0f;
        for (int o = 0; o < FCNET_OUT; ++o) {
          float d = out[o] - (y[k] == o ? 1.0f : 0.0f);
          g_b2[o] += d;
          for (int h = 0; h < FCNET_HIDDEN; ++h) {
            g_w2[o * FCNET_HIDDEN + h] += d * hidden[h];
            delta_hidden[h] += d * w2[o * FCNET_HIDDEN + h];
          }
        }
        for (int h = 0; h < FCNET_HIDDEN; ++h) {
          if (hidden[h] <= 0.0f) continue;
          g_b1[h] += delta_hidden[h];
          for (int i = 0; i < FCNET_IN; ++i) g_w1[h * FCNET_IN + i] += delta_hidden[h] * xk[i];
        }
      }
      float scale = rate / (float)(end - start);
      for (int p = 0; p < FCNET_PARAMS; ++p) params[p] -= scale * grad[p];
    }
  }
  fcnet_predict_all(params, x + n_train * FCNET_IN, n_test, scores);
}
