// The plain loop the tuned kernel is checked against.
void matvec_reference(float* y, const float* A, const float* x, int n) {
  for (long i = 0; i < n; ++i) {
    double sum = 0;
    for (long j = 0; j < n; ++j) sum += double(A[i * n + j]) * x[j];
    y[i] = float(sum);
  }
}
