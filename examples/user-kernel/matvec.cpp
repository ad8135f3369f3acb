// A user kernel: y = A x for a square row-major A, tiled by the configuration.
// `rows` = (row blocks, rows per block): the rows of a block share each load of
// x; `columns` is the length of the column strips walked per block.
void matvec(float* y, const float* A, const float* x, int n) {
  constexpr long R = rows_1;
  for (long block = 0; block < rows_0; ++block) {
    float acc[R] = {};
    const float* a = A + block * R * n;
    for (long c0 = 0; c0 < n; c0 += columns)
      for (long r = 0; r < R; ++r)
        for (long c = c0; c < c0 + columns && c < n; ++c) acc[r] += a[r * n + c] * x[c];
    for (long r = 0; r < R; ++r) y[block * R + r] = acc[r];
  }
}
