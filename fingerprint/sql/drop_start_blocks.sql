DROP TABLE IF EXISTS start_blocks
