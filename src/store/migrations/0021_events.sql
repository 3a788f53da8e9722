CREATE TABLE `events` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`id` text NOT NULL,
	`type` text NOT NULL,
	`account_id` text NOT NULL,
	`site_id` text,
	`site_slug` text,
	`data` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `events_id_unique` ON `events` (`id`);--> statement-breakpoint
CREATE INDEX `events_account` ON `events` (`account_id`,`seq`);--> statement-breakpoint
CREATE INDEX `events_site` ON `events` (`site_id`,`seq`);--> statement-breakpoint
CREATE INDEX `events_created` ON `events` (`created_at`);