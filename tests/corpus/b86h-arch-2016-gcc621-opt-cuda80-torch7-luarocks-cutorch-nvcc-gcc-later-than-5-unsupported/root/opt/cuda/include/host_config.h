/* host_config.h of CUDA 8.0.44, excerpt (line 119 as the thread quotes it) */
#if defined(__GNUC__)

#if __GNUC__ > 5

#error -- unsupported GNU version! gcc versions later than 5 are not supported!

#endif /* __GNUC__ > 5 */
