// Stands in for Gloo's <gloo/algorithm.h>: see gloo/stub.h.
#pragma once

#include "gloo/stub.h"
