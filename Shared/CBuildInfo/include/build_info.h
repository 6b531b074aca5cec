#ifndef AVIARY_CBUILDINFO_H
#define AVIARY_CBUILDINFO_H
/// The git revision the binary was built from (`Package.swift` passes it as AVIARY_REVISION).
const char *aviary_build_revision(void);
#endif
