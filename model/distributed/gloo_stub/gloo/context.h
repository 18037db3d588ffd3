// Stands in for Gloo's <gloo/context.h>: see gloo/stub.h.
#pragma once

#include "gloo/stub.h"
