-- Each sized request in its device's issue order, reduced to integers (filled by device_seeks.sql,
-- one device at a time): its window's regime class (regime_w), --between flag, op code (1 read,
-- 2 write, 0 other), whether it is sequential and its seek distance; its pid and whether it is
-- sequential in that process's own order on the device (pseq). device_order reads it twice
-- (partials per regime class, then the few seeks near the median), process_order once.
CREATE OR REPLACE TEMP TABLE dev_seeks (rg UTINYINT, btw BOOLEAN, opc UTINYINT, seq BOOLEAN, seek_lbn BIGINT,
    pid INTEGER, pseq BOOLEAN)
