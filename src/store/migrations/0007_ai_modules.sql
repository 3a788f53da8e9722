CREATE TABLE `ai_usage` (
	`site_id` text NOT NULL,
	`month` text NOT NULL,
	`tokens` integer DEFAULT 0 NOT NULL,
	`calls` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`site_id`, `month`)
);
--> statement-breakpoint
CREATE TABLE `translations` (
	`site_id` text NOT NULL,
	`path` text NOT NULL,
	`lang` text NOT NULL,
	`source_hash` text NOT NULL,
	`html` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`site_id`, `path`, `lang`)
);
