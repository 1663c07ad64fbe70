// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef PERCENTILES_H
#define PERCENTILES_H

#include <algorithm>
#include <cmath>
#include <vector>

// Nearest-rank percentiles of a sample (the smallest value that at least p of the sample does
// not exceed), as the latency experiments report them.
struct Percentiles
{
    double median = 0;
    double p99 = 0;
    double max = 0;

    static Percentiles of(std::vector<double> sample)
    {
        Percentiles r;
        if (sample.empty())
            return r;
        std::sort(sample.begin(), sample.end());
        auto at = [&sample](double p) {
            const size_t rank = size_t(std::ceil(p * double(sample.size())));
            return sample[std::max<size_t>(rank, 1) - 1];
        };
        r.median = at(0.50);
        r.p99 = at(0.99);
        r.max = sample.back();
        return r;
    }
};

#endif // PERCENTILES_H
