CREATE TABLE `node_join_tokens` (
	`token_hash` text PRIMARY KEY NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`used_at` integer,
	`node_id` text
);
--> statement-breakpoint
CREATE TABLE `nodes` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`address` text NOT NULL,
	`agent_port` integer NOT NULL,
	`swarm_node_id` text,
	`cert_fingerprint` text NOT NULL,
	`cert_serial` text NOT NULL,
	`state` text NOT NULL,
	`memory_bytes` integer DEFAULT 0 NOT NULL,
	`cpus` integer DEFAULT 0 NOT NULL,
	`joined_at` integer NOT NULL,
	`last_seen_at` integer,
	`removed_at` integer
);
--> statement-breakpoint
CREATE INDEX `nodes_state` ON `nodes` (`state`);