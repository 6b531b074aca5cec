#include "build_info.h"

#ifndef AVIARY_REVISION
#define AVIARY_REVISION "unknown"
#endif

const char *aviary_build_revision(void) { return AVIARY_REVISION; }
