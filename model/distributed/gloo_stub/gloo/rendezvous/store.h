// Stands in for Gloo's <gloo/rendezvous/store.h>: see gloo/stub.h.
#pragma once

#include "gloo/stub.h"
