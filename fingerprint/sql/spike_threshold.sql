-- Robust spike threshold: median IOPS of the steady windows plus max(3 scaled MADs, half the
-- median). The MAD is scaled by 1.4826 to estimate a standard deviation; the half-median floor
-- stops a very flat steady state from calling noise a spike. With no steady window the base is the
-- non-empty windows, so a mostly idle trace is not all "spike" against a median of zero.
WITH base AS (
    SELECT iops FROM series JOIN regime USING (k)
    WHERE CASE WHEN (SELECT bool_or(steady) FROM regime) THEN steady ELSE iops > 0 END
), m AS (SELECT median(iops) AS med FROM base),
mad AS (SELECT median(abs(iops - (SELECT med FROM m))) AS mad FROM base)
SELECT coalesce(med, 0) AS med, coalesce(mad, 0) * 1.4826 AS sigma,
    coalesce(med + greatest(3 * mad * 1.4826, 0.5 * med), 0) AS threshold
FROM m, mad
