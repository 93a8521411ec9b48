DROP TABLE dev_seeks
