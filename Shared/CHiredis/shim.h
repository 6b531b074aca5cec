#ifndef AVIARY_CHIREDIS_SHIM_H
#define AVIARY_CHIREDIS_SHIM_H
#include <hiredis/hiredis.h>
#endif
