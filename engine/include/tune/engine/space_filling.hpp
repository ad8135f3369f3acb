#pragma once
// Space-filling designs: the first evaluations of a model-based search spread
// over the space instead of drawn at random, so the model's first fit sees
// every region and every value of every parameter.
//
//   latin_hypercube(k, d)     k points in [0, 1)^d, one in each of the k equal
//                             strata of every dimension
//   space_filling_design(...) the maximin one of several Latin hypercubes over
//                             the parameters, each point snapped to the
//                             nearest valid configuration of a pool
//
// The design lives in quantile coordinates of the pool (the valid
// configurations): a stratum of width 1/k of parameter p holds 1/k of the
// pool's values of p, so the design follows where valid configurations are
// (a constrained space's corners hold few) instead of the Cartesian box.

#include <cstddef>
#include <vector>

#include "tune/engine/space.hpp"

namespace tune {

/// `points` × `dimension` coordinates in [0, 1), row-major: in every
/// dimension each of the intervals [i / points, (i + 1) / points) holds
/// exactly one point, at a uniform position within it; the strata are
/// matched across dimensions by independent random permutations.
std::vector<double> latin_hypercube(std::size_t points, std::size_t dimension, rng_type& rng);

/// Smallest Euclidean distance between two rows of a row-major matrix of
/// width `dimension`; +infinity with fewer than two rows.
double minimum_distance(const std::vector<double>& points, std::size_t dimension);

/// Quantile coordinates of the values of each parameter over a pool of
/// configurations: value v of parameter p maps to (F(v⁻) + F(v)) / 2, the
/// middle of its interval of the pool's cumulative distribution of p, so
/// that strata of equal width hold equal shares of the pool. A value absent
/// from the pool maps to the point where it would start. out[p][v].
std::vector<std::vector<double>> quantile_coordinates(const search_space& space,
                                                      const std::vector<configuration>& pool);

/// Indices of `count` distinct pool members that fill the space: `tries`
/// Latin hypercubes over the parameters' quantile coordinates, each point
/// snapped to the nearest pool member not taken (and not already in that
/// design); the design whose members' smallest pairwise distance is largest
/// wins (ties: the earlier). Fewer when the pool has fewer untaken members.
/// `taken` is empty or one flag per pool member. Throws
/// std::invalid_argument when tries is 0 or taken has the wrong size.
std::vector<std::size_t> space_filling_design(const search_space& space, const std::vector<configuration>& pool,
                                              const std::vector<bool>& taken, std::size_t count, std::size_t tries,
                                              rng_type& rng);

}  // namespace tune
