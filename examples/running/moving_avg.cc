// moving_avg: a running user-defined aggregate in Tigon's calling convention.
// Its scratchpad keeps one pane (sum, count) per epoch of the group's last N
// epochs; REINIT_ (a new epoch, the group carried over) moves to the next
// pane and empties it.
#include "gsconfig.h"
#include "gstypes.h"
#include "hfta_udaf.h"
#include <string.h>

struct moving_avg_panes {
    gs_uint32_t n;         // panes in use: N (at most 8)
    gs_uint32_t pos;       // the current epoch's pane
    gs_uint64_t sum[8];
    gs_uint32_t cnt[8];
};

void moving_avg_HFTA_AGGR_INIT_(gs_sp_t b) { memset(b, 0, sizeof(moving_avg_panes)); }

void moving_avg_HFTA_AGGR_UPDATE_(gs_sp_t b, gs_uint32_t v, gs_uint32_t n)
{
    moving_avg_panes *m = (moving_avg_panes *)b;
    if (m->n == 0)
        m->n = n < 1 ? 1 : n > 8 ? 8 : n;
    m->sum[m->pos] += v;
    m->cnt[m->pos] += 1;
}

void moving_avg_HFTA_AGGR_OUTPUT_(gs_float_t *r, gs_sp_t b)
{
    moving_avg_panes *m = (moving_avg_panes *)b;
    gs_uint64_t s = 0, c = 0;
    for (int i = 0; i < 8; i++) {
        s += m->sum[i];
        c += m->cnt[i];
    }
    *r = c ? (gs_float_t)s / (gs_float_t)c : 0.0;
}

void moving_avg_HFTA_AGGR_REINIT_(gs_sp_t b)
{
    moving_avg_panes *m = (moving_avg_panes *)b;
    if (m->n == 0)
        return;
    m->pos = (m->pos + 1) % m->n;
    m->sum[m->pos] = 0;
    m->cnt[m->pos] = 0;
}

void moving_avg_HFTA_AGGR_DESTROY_(gs_sp_t b) { (void)b; }
