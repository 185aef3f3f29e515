-- MySQL dump 10.13
/*!40101 SET NAMES utf8mb4 */;
LOCK TABLES `yourls_url` WRITE;
INSERT INTO `yourls_url` VALUES ('ozh','https://ozh.org/?a=1;b=\\'x\\'','Title \"q\" \\\\',\'2024-01-02 03:04:05\',\'127.0.0.1\',12),('Up-Case','http://e.com/),(x',NULL,'2024-01-02 03:04:05','::1',0);
UNLOCK TABLES;
