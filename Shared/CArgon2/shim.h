#ifndef AVIARY_CARGON2_SHIM_H
#define AVIARY_CARGON2_SHIM_H
#include <argon2.h>
#endif
