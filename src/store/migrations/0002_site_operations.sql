CREATE TABLE `archives` (
	`id` text PRIMARY KEY NOT NULL,
	`site_id` text NOT NULL,
	`kind` text NOT NULL,
	`status` text NOT NULL,
	`storage_key` text,
	`size_bytes` integer,
	`file_count` integer,
	`error` text,
	`created_at` integer NOT NULL,
	`completed_at` integer,
	`restored_at` integer,
	FOREIGN KEY (`site_id`) REFERENCES `sites`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `archives_site` ON `archives` (`site_id`,`kind`,`created_at`);--> statement-breakpoint
CREATE TABLE `deployments` (
	`id` text PRIMARY KEY NOT NULL,
	`site_id` text NOT NULL,
	`status` text NOT NULL,
	`output` text DEFAULT '' NOT NULL,
	`error` text,
	`created_at` integer NOT NULL,
	`started_at` integer,
	`finished_at` integer,
	FOREIGN KEY (`site_id`) REFERENCES `sites`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `deployments_site` ON `deployments` (`site_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `site_metrics_daily` (
	`site_id` text NOT NULL,
	`day` text NOT NULL,
	`requests` integer DEFAULT 0 NOT NULL,
	`bytes_out` integer DEFAULT 0 NOT NULL,
	`status_2xx` integer DEFAULT 0 NOT NULL,
	`status_3xx` integer DEFAULT 0 NOT NULL,
	`status_4xx` integer DEFAULT 0 NOT NULL,
	`status_5xx` integer DEFAULT 0 NOT NULL,
	`latency` text DEFAULT '[]' NOT NULL,
	PRIMARY KEY(`site_id`, `day`)
);
--> statement-breakpoint
ALTER TABLE `sites` ADD `deleted_at` integer;