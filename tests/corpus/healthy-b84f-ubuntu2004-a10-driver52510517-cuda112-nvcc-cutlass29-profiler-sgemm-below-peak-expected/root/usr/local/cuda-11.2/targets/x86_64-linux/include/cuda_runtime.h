/* CUDA runtime API header (marker) */
