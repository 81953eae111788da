/* excerpt: the host-compiler guard of CUDA 12.3's crt/host_config.h */
#if defined(__GNUC__)
#if __GNUC__ > 12

#error -- unsupported GNU version! gcc versions later than 12 are not supported! The nvcc flag '-allow-unsupported-compiler' can be used to override this version check; however, using an unsupported host compiler may cause compilation failure or incorrect run time execution. Use at your own risk.

#endif /* __GNUC__ > 12 */
#endif /* __GNUC__ */
