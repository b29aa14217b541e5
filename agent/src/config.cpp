// Placeholder until the configuration parser lands (see config.h).
#include "config.h"
