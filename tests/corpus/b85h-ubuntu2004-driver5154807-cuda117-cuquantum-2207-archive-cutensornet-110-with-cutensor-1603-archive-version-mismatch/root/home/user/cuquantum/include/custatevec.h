/* excerpt: the version macros of cuStateVec 1.1.0 (cuQuantum 22.07.0) */
#define CUSTATEVEC_VER_MAJOR 1 //!< cuStateVec major version.
#define CUSTATEVEC_VER_MINOR 1 //!< cuStateVec minor version.
#define CUSTATEVEC_VER_PATCH 0 //!< cuStateVec patch version.
#define CUSTATEVEC_VERSION 1100 //!< cuStateVec Version.
