/**
 * The handle every domain function takes first: the pool, or a transaction opened on it. The HTTP floor holds
 * one in its dependencies and hands it down without knowing the driver.
 */
export type { Sql } from "../../db/connection.ts";
