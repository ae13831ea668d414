// OpenMP wait policy for the command-line programs (vtrain, dittrain, veval).
//
// Why: with the default (active) policy, OpenMP workers spin between
// parallel regions. On a machine whose cores are shared with other processes
// (data-loader threads, other jobs) the spinning starves the threads doing
// real work: a vtrain step was up to 5x slower and dittrain went from 45 to
// 11.6 img/s on a loaded 2-core machine. The OpenMP runtime reads
// OMP_WAIT_POLICY once, before main(), so it cannot be changed in-process;
// the program re-executes itself with the variable set instead.
#pragma once

namespace vt {

// Unless OMP_WAIT_POLICY is already set (to anything: OMP_WAIT_POLICY=active
// keeps spinning workers on a dedicated machine), sets
// OMP_WAIT_POLICY=passive and re-executes the running program
// (/proc/self/exe) with the same argv. Returns only when no re-execution was
// needed or it failed (then the program carries on with the runtime's
// default policy). Call it first thing in main(), before any thread exists.
void reexec_with_passive_omp_wait(char** argv);

}  // namespace vt
