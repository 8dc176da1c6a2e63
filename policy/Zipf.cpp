#include "policy/Zipf.h"

#include <algorithm>
#include <cmath>

namespace tierd::policy {

uint64_t SplitMix64::next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double SplitMix64::uniform() {
  return static_cast<double>(next() >> 11) * 0x1.0p-53;
}

uint64_t SplitMix64::below(uint64_t n) {
  __extension__ typedef unsigned __int128 U128;
  return static_cast<uint64_t>((static_cast<U128>(next()) * n) >> 64);
}

ZipfGenerator::ZipfGenerator(uint64_t n, double s, uint64_t seed) : rng_(seed) {
  cdf_.resize(std::max<uint64_t>(1, n));
  double sum = 0;
  for (uint64_t k = 0; k < cdf_.size(); ++k) {
    sum += 1.0 / std::pow(static_cast<double>(k + 1), s);
    cdf_[k] = sum;
  }
  for (double& c : cdf_)
    c /= sum;
  cdf_.back() = 1.0;
}

uint64_t ZipfGenerator::next() {
  double u = rng_.uniform();
  return static_cast<uint64_t>(std::upper_bound(cdf_.begin(), cdf_.end(), u) - cdf_.begin());
}

double ZipfGenerator::probability(uint64_t k) const {
  if (k >= cdf_.size()) return 0;
  return k == 0 ? cdf_[0] : cdf_[k] - cdf_[k - 1];
}

}  // namespace tierd::policy
