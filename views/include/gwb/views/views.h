#pragma once
// Everything the main window and `gwb figure` need from gwb_views.

#include "gwb/views/angles_view.h"
#include "gwb/views/attention_view.h"
#include "gwb/views/chart_widget.h"
#include "gwb/views/colormap.h"
#include "gwb/views/compare_view.h"
#include "gwb/views/figure_export.h"
#include "gwb/views/figure_options.h"
#include "gwb/views/gate_view.h"
#include "gwb/views/heatmap_widget.h"
#include "gwb/views/plucker_view.h"
#include "gwb/views/selection.h"
#include "gwb/views/sphere_widget.h"
#include "gwb/views/subspace_view.h"
#include "gwb/views/token_strip.h"
#include "gwb/views/view.h"
#include "gwb/views/view_data.h"
