/* A library whose soname is the CUDA driver's (libcuda.so.1) and that does
 * nothing: loading it tells DriverWatch's tests that the driver appeared,
 * on machines with no CUDA at all. */
int loom_fake_cuda_driver_marker(void) { return 1; }
