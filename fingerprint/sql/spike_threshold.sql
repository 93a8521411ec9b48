-- Robust spike thresholds, one on IOPS and one on MB/s: the median of the steady windows plus
-- max(3 scaled MADs, half the median). The MAD is scaled by 1.4826 to estimate a standard deviation;
-- the half-median floor stops a very flat steady state from calling noise a spike. With no steady
-- window the base is the non-empty windows, so a mostly idle trace is not all "spike" against a
-- median of zero. MB/s has its own threshold because a peak of large I/Os (a backup, a batch scan,
-- a checkpoint) can double the bytes without moving the I/O count.
WITH base AS (
    SELECT iops, mbps FROM series JOIN regime USING (k)
    WHERE CASE WHEN (SELECT bool_or(steady) FROM regime) THEN steady ELSE iops > 0 END
), m AS (SELECT median(iops) AS med, median(mbps) AS med_mb FROM base),
mad AS (
    SELECT median(abs(iops - (SELECT med FROM m))) AS mad,
        median(abs(mbps - (SELECT med_mb FROM m))) AS mad_mb
    FROM base
)
SELECT coalesce(med, 0) AS med, coalesce(mad, 0) * 1.4826 AS sigma,
    coalesce(med + greatest(3 * mad * 1.4826, 0.5 * med), 0) AS threshold,
    coalesce(med_mb, 0) AS med_mb,
    coalesce(med_mb + greatest(3 * mad_mb * 1.4826, 0.5 * med_mb), 0) AS threshold_mb
FROM m, mad
