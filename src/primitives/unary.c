/* Unary primitives: conversion and copies. */
#include "backend/cpu/kernels.h"
#include "primitives/registry.h"

CMX__VTABLE(AsType, .eval_cpu = cmx__cpu_astype);
CMX__VTABLE(Copy, .eval_cpu = cmx__cpu_astype);
