-- Robust spike threshold: median IOPS of the steady windows (all windows when none is steady)
-- plus max(3 scaled MADs, half the median). The MAD is scaled by 1.4826 to estimate a standard
-- deviation; the half-median floor stops a very flat steady state from calling noise a spike.
WITH base AS (
    SELECT iops FROM series JOIN regime USING (k)
    WHERE steady OR NOT (SELECT bool_or(steady) FROM regime)
), m AS (SELECT median(iops) AS med FROM base),
mad AS (SELECT median(abs(iops - (SELECT med FROM m))) AS mad FROM base)
SELECT med, mad * 1.4826 AS sigma, med + greatest(3 * mad * 1.4826, 0.5 * med) AS threshold
FROM m, mad
