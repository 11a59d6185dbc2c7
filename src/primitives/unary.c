/* Unary primitives: conversion and copies. */
#include "backend/cpu/kernels.h"
#include "backend/cuda/kernels.h"
#include "primitives/registry.h"

CMX__VTABLE(AsType, .eval_cpu = cmx__cpu_astype, .eval_gpu = cmx__gpu_copy);
CMX__VTABLE(Copy, .eval_cpu = cmx__cpu_astype, .eval_gpu = cmx__gpu_copy);
