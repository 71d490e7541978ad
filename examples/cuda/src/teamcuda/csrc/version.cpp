// Host-only code, so a C++ unit goes through CMake's compiler launcher too.
extern "C" const char* teamcuda_version() { return "1.0.0"; }
