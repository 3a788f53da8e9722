CREATE TABLE `site_databases` (
	`id` text PRIMARY KEY NOT NULL,
	`site_id` text NOT NULL,
	`name` text NOT NULL,
	`engine` text NOT NULL,
	`state` text NOT NULL,
	`version` text,
	`sealed` text NOT NULL,
	`memory_mb` integer NOT NULL,
	`disk_gb` integer NOT NULL,
	`error` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`deleted_at` integer,
	FOREIGN KEY (`site_id`) REFERENCES `sites`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `site_databases_name` ON `site_databases` (`site_id`,`name`);--> statement-breakpoint
CREATE INDEX `site_databases_site` ON `site_databases` (`site_id`,`created_at`);