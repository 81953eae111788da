/* cudnn : Neural Networks Library */
#include "cudnn_version.h"
