__global__ void envdoctor_probe_kernel(float *x) { x[threadIdx.x] *= 2.0f; }
