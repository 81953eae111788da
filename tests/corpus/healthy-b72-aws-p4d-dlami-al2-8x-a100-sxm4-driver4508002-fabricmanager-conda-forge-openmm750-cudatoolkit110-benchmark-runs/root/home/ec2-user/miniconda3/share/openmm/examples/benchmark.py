# OpenMM benchmark script (marker)
