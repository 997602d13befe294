// gsqlc_sampling_hfta.cc -- the stateful functions of gsqlc's library of
// GS-lite's functions (compiler/gsqlc/data/gsqlc_aggregates.def), in Tigon's
// convention for them: `T f(void *state, int curr_num_samples, args...)` and a
// STATE's _sfun_state_clean_init_/dirty_init_/final_init_/destroy_.  They run
// in an HFTA's sampling query, a state block per supergroup (see docs/language.md,
// "Sampling queries").
//
//   smart_sampling_state (fstring100): dynamic subset-sum sampling, as the
//       Tigon SQL User Manual's section 14.1 describes it -- ssample,
//       ssdo_clean, ssclean_with, ssfinal_clean, ssthreshold -- and GS-lite's
//       reporting functions over the same state (packet_count, gamma,
//       do_clean_count, init_threshold, delay, newly_closed).
//   manku_hh_state (fstring20): the bucket counter of Manku and Motwani's
//       lossy counting -- local_count(w), current_bucket().
//
// Every definition is weak: a user's --udf source defining the same function
// takes precedence.
#include <cstdint>
#include <cstring>

#include "hfta_udaf.h"
#include "gsqlc_udaf_lib.h"

// ------------------------------------------------------------ smart sampling
// The sample is the supergroup's groups (curr_num_samples of them).  z is the
// size threshold: an object of size x is sampled with probability
// min(1, x / z), systematically (a running sum of the small sizes crosses a
// multiple of z).  When the sample grows past gamma * N a cleaning phase
// raises z by gamma and subsamples the groups with it (an estimate below the
// previous threshold counting as that threshold); at the window's end z is
// adjusted to aim at N and a final pass subsamples to about N groups.  The
// estimate of a group's total is max(its sampled sum, z).
namespace {

struct ss_state {
    double small_sum;      // running sum of the small sizes ssample saw
    double clean_sum;      // the same for ssclean_with
    double final_sum;      // and for ssfinal_clean
    double z;              // the threshold
    double z_prev;         // the threshold before the latest raise
    double gamma;          // the sample may grow to gamma * N
    double z_start;        // the threshold the window started with
    double z_sampled;      // after the window's end: the threshold its final
                           // sample was drawn at (the estimates')
    gs_int32_t cleaning;   // a cleaning phase (or the final pass) began
    gs_int32_t big;        // objects over z seen since z was last set
    gs_int32_t n_wanted;   // N, from ssample's second argument
    gs_int32_t final_set;  // z took its end-of-window value
    gs_int32_t packets;    // ssample calls in this window
    gs_int32_t cleanings;  // threshold adjustments in this window
    gs_int32_t delay;      // GS-lite's flow-sampling delay (0 here)
    gs_int32_t closing;    // GS-lite's newly closed flows (0 here)
};
static_assert(sizeof(ss_state) <= 100, "smart_sampling_state is an fstring100");

ss_state *ss(void *s) { return static_cast<ss_state *>(s); }

// z scaled so that n sampled objects would have been about N: the manual's
// aggressive adjustment (the big objects stay, the rest scale)
double ss_retarget(const ss_state &st, int n)
{
    double z = st.z;
    if (st.n_wanted <= 0)
        return z;
    if (n < st.n_wanted) {
        double have = (double)n - (double)st.big;
        double want = (double)st.n_wanted - (double)st.big;
        if (have < 1)
            have = 1;
        if (want > 0)
            z = z * (have / want);
    } else {
        z = z * ((double)n / (double)st.n_wanted);
    }
    return z < 1 ? 1 : z;
}

// the systematic subsample of one estimate against z, with running sum *acc
bool ss_keep(ss_state &st, double *acc, gs_uint64_t estimate)
{
    double x = (double)estimate < st.z_prev ? st.z_prev : (double)estimate;
    if (x > st.z) {
        st.big++;
        return true;
    }
    *acc += x;
    if (*acc >= st.z) {
        *acc -= st.z;
        return true;
    }
    return false;
}

gs_uint32_t ss_sample(void *s, gs_uint64_t len, gs_uint32_t n_wanted)
{
    ss_state &st = *ss(s);
    st.packets++;
    st.n_wanted = (gs_int32_t)n_wanted;
    if (st.cleaning) {   // back from a cleaning phase
        st.clean_sum = 0;
        st.cleaning = 0;
    }
    if ((double)len > st.z) {
        st.big++;
        return 1;
    }
    st.small_sum += (double)len;
    if (st.small_sum >= st.z) {
        st.small_sum -= st.z;
        return 1;
    }
    return 0;
}

}  // namespace

GSQ_LIB void _sfun_state_clean_init_smart_sampling_state(void *s)
{
    std::memset(s, 0, sizeof(ss_state));
    ss_state &st = *ss(s);
    st.z = 200;   // the manual's initial threshold
    st.z_start = st.z;
    st.gamma = 2;
}

// a new window of the same supergroup: the threshold carries over, aimed at
// N from the number of groups the old window ended with
GSQ_LIB void _sfun_state_dirty_init_smart_sampling_state(void *s_new, void *s_old,
                                                          int curr_num_samples)
{
    const ss_state &old = *ss(s_old);
    std::memset(s_new, 0, sizeof(ss_state));
    ss_state &st = *ss(s_new);
    st.z = ss_retarget(old, curr_num_samples);
    st.z_start = st.z;
    st.gamma = old.gamma;
    st.n_wanted = old.n_wanted;
    st.cleaning = old.cleaning;
}

// the window ends: z takes its final value for ssfinal_clean (once)
GSQ_LIB void _sfun_state_final_init_smart_sampling_state(void *s, int curr_num_samples)
{
    ss_state &st = *ss(s);
    if (st.final_set)
        return;
    st.z_prev = st.z;
    st.z = ss_retarget(st, curr_num_samples);
    // at most N groups: the final pass keeps them all, drawn at the old z
    st.z_sampled = curr_num_samples <= st.n_wanted ? st.z_prev : st.z;
    st.big = 0;
    st.final_set = 1;
    st.cleanings++;
}

GSQ_LIB void _sfun_state_destroy_smart_sampling_state(void *s) { (void)s; }

GSQ_LIB gs_uint32_t ssample(void *s, int curr_num_samples, gs_uint32_t len, gs_uint32_t n)
{
    (void)curr_num_samples;
    return ss_sample(s, len, n);
}

GSQ_LIB gs_uint32_t ssample(void *s, int curr_num_samples, gs_int32_t len, gs_uint32_t n)
{
    (void)curr_num_samples;
    return ss_sample(s, len < 0 ? 0 : (gs_uint64_t)len, n);
}

GSQ_LIB gs_uint32_t ssample(void *s, int curr_num_samples, gs_uint64_t len, gs_uint32_t n)
{
    (void)curr_num_samples;
    return ss_sample(s, len, n);
}

GSQ_LIB gs_uint32_t ssample(void *s, int curr_num_samples, gs_int64_t len, gs_uint32_t n)
{
    (void)curr_num_samples;
    return ss_sample(s, len < 0 ? 0 : (gs_uint64_t)len, n);
}

// CLEANING_WHEN: the sample outgrew gamma * N -- raise z by gamma and clean
GSQ_LIB gs_uint32_t ssdo_clean(void *s, int curr_num_samples)
{
    ss_state &st = *ss(s);
    if ((double)curr_num_samples > st.gamma * (double)st.n_wanted) {
        st.z_prev = st.z;
        st.z = st.gamma * st.z;
        st.cleaning = 1;
        st.big = 0;
        st.small_sum = 0;
        st.clean_sum = 0;
        st.cleanings++;
    }
    return (gs_uint32_t)st.cleaning;
}

// CLEANING_BY: whether a group (its sampled sum) stays in the sample
GSQ_LIB gs_uint32_t ssclean_with(void *s, int curr_num_samples, gs_uint64_t sum)
{
    (void)curr_num_samples;
    ss_state &st = *ss(s);
    return ss_keep(st, &st.clean_sum, sum) ? 1 : 0;
}

// HAVING: the final pass -- every group when there are at most N
GSQ_LIB gs_uint32_t ssfinal_clean(void *s, int curr_num_samples, gs_uint64_t sum)
{
    ss_state &st = *ss(s);
    st.cleaning = 1;   // ssample starts the next window afresh
    if (curr_num_samples <= st.n_wanted)
        return 1;
    return ss_keep(st, &st.final_sum, sum) ? 1 : 0;
}

// the threshold; once the window has ended, the one its final sample was
// drawn at -- the manual's z, except when the final pass keeps every group:
// then z was lowered for the next window but the sample was drawn at the
// previous z, and max(sum, lowered z) would underestimate
GSQ_LIB gs_float_t ssthreshold(void *s, int curr_num_samples)
{
    (void)curr_num_samples;
    const ss_state &st = *ss(s);
    return st.final_set ? st.z_sampled : st.z;
}

GSQ_LIB gs_int32_t packet_count(void *s, int curr_num_samples)
{
    (void)curr_num_samples;
    return ss(s)->packets;
}

GSQ_LIB gs_float_t gamma(void *s, int curr_num_samples)
{
    (void)curr_num_samples;
    return ss(s)->gamma;
}

GSQ_LIB gs_int32_t do_clean_count(void *s, int curr_num_samples)
{
    (void)curr_num_samples;
    return ss(s)->cleanings;
}

GSQ_LIB gs_int32_t init_threshold(void *s, int curr_num_samples)
{
    (void)curr_num_samples;
    double z = ss(s)->z_start;
    return z >= 2147483647.0 ? 2147483647 : (gs_int32_t)z;
}

GSQ_LIB gs_int32_t delay(void *s, int curr_num_samples)
{
    (void)curr_num_samples;
    return ss(s)->delay;
}

GSQ_LIB gs_int32_t newly_closed(void *s, int curr_num_samples)
{
    (void)curr_num_samples;
    return ss(s)->closing;
}

// ------------------------------------------------- Manku-Motwani lossy counting
// local_count(w) counts the supergroup's tuples and is TRUE at the end of
// every bucket of w of them (the query's CLEANING_WHEN); current_bucket() is
// the bucket the next counted tuple falls in: 1 + the number of buckets
// completed.  A group's first value of current_bucket() is its bucket b0 (its
// error bound is b0 - 1), and at a bucket's end (current_bucket() = b + 1 for
// the completed bucket b) lossy counting drops a group when
// count + b0 - 1 <= b, that is it keeps count(*) + b0 > current_bucket().
// Each window of a supergroup starts again at bucket 1 (as GS-lite's).
namespace {

struct hh_state {
    gs_uint32_t in_bucket;   // tuples counted in the current bucket
    gs_uint32_t bucket;      // the current bucket (from 1)
};
static_assert(sizeof(hh_state) <= 20, "manku_hh_state is an fstring20");

hh_state *hh(void *s) { return static_cast<hh_state *>(s); }

}  // namespace

GSQ_LIB void _sfun_state_clean_init_manku_hh_state(void *s)
{
    std::memset(s, 0, sizeof(hh_state));
    hh(s)->bucket = 1;
}

GSQ_LIB void _sfun_state_dirty_init_manku_hh_state(void *s_new, void *s_old, int curr_num_samples)
{
    (void)s_old;
    (void)curr_num_samples;
    _sfun_state_clean_init_manku_hh_state(s_new);
}

GSQ_LIB void _sfun_state_final_init_manku_hh_state(void *s, int curr_num_samples)
{
    (void)s;
    (void)curr_num_samples;
}

GSQ_LIB void _sfun_state_destroy_manku_hh_state(void *s) { (void)s; }

GSQ_LIB gs_uint32_t local_count(void *s, int curr_num_samples, gs_uint32_t w)
{
    (void)curr_num_samples;
    hh_state &st = *hh(s);
    if (++st.in_bucket < (w == 0 ? 1 : w))
        return 0;
    st.in_bucket = 0;
    st.bucket++;
    return 1;
}

GSQ_LIB gs_int32_t current_bucket(void *s, int curr_num_samples)
{
    (void)curr_num_samples;
    return (gs_int32_t)hh(s)->bucket;
}
