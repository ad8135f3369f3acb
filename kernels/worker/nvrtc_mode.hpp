#pragma once
// The worker's NVRTC mode: compiles one CUDA source to a cubin in a process
// of its own, so that the engine can stop a compile that overruns its limit
// by killing it (NVRTC cannot be interrupted in-process, and a compile left
// running on an engine thread keeps a core busy and can outlive the engine's
// own teardown).
//
//   tune-kernel-worker --nvrtc LIBRARY ARCH SOURCE CUBIN
//
// LIBRARY is the NVRTC library to load (the one the engine links, so that
// the cubin and the engine's cache key name one NVRTC), ARCH the compute
// capability (e.g. 90), SOURCE the .cu file, CUBIN the file to write.
// The compiler's log goes to stdout. Exit code 0: compiled; 1: the source
// does not compile (the log says why); 3: NVRTC could not be loaded or a
// file could not be read or written (stdout says which); 2: bad arguments.

namespace tune::worker {

int run_nvrtc_mode(const char* library, const char* arch, const char* source, const char* cubin);

}  // namespace tune::worker
