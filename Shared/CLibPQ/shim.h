#ifndef AVIARY_CLIBPQ_SHIM_H
#define AVIARY_CLIBPQ_SHIM_H
#include <libpq-fe.h>
#endif
