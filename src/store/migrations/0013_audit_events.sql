CREATE TABLE `audit_events` (
	`id` text PRIMARY KEY NOT NULL,
	`site_id` text NOT NULL,
	`account_id` text NOT NULL,
	`kind` text NOT NULL,
	`actor` text NOT NULL,
	`key_id` text,
	`key_prefix` text,
	`admin_user` text,
	`run_as` text DEFAULT 'site' NOT NULL,
	`command` text,
	`command_bytes` integer,
	`started_at` integer NOT NULL,
	`ended_at` integer,
	`exit_code` integer,
	`reason` text,
	FOREIGN KEY (`site_id`) REFERENCES `sites`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `audit_events_site` ON `audit_events` (`site_id`,`started_at`);--> statement-breakpoint
CREATE INDEX `audit_events_started` ON `audit_events` (`started_at`);