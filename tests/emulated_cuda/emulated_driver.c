/* libcuda.so.1 of the emulated CUDA runtime: empty. libloom asks whether a
 * CUDA driver is loaded before it asks anything of CUDA; the emulated
 * runtime depends on this library so that the answer is yes. */
int loomEmulatedDriver(void);
int loomEmulatedDriver(void) { return 1; }
