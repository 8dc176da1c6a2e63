#pragma once
/// \file
/// Deterministic random streams for benchmarks, golden tests and property tests: the same seed
/// gives the same sequence on every machine and standard library (std:: distributions do not
/// promise that, so none are used).

#include <cstdint>
#include <vector>

namespace tierd::policy {

/// SplitMix64 (Steele, Lea, Flood 2014): a small, fast, fully specified 64-bit generator.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next();
  /// Uniform in [0, 1) with 53 random bits.
  double uniform();
  /// Uniform in [0, n), n > 0 (multiply-shift; bias below 2^-32 for n < 2^32).
  uint64_t below(uint64_t n);

 private:
  uint64_t state_;
};

/// Zipf(s) over ranks 0..n-1 (rank 0 most frequent): P(k) proportional to 1/(k+1)^s. Inverse
/// CDF over a precomputed table (8 bytes per item), binary search per draw.
class ZipfGenerator {
 public:
  /// n >= 1 items, exponent s >= 0 (0 = uniform), fixed seed.
  ZipfGenerator(uint64_t n, double s, uint64_t seed);
  /// Next rank in [0, n).
  uint64_t next();
  /// Probability of rank k.
  double probability(uint64_t k) const;

 private:
  std::vector<double> cdf_;
  SplitMix64 rng_;
};

}  // namespace tierd::policy
