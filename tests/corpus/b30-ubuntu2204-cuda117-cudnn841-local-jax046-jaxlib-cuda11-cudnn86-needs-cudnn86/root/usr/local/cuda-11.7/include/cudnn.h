#include "cudnn_version.h"
