ALTER TABLE `deployments` ADD `archive_id` text;--> statement-breakpoint
ALTER TABLE `deployments` ADD `rollback_of` text;--> statement-breakpoint
ALTER TABLE `sites` ADD `suspended_by` text;--> statement-breakpoint
ALTER TABLE `sites` ADD `suspended_reason` text;--> statement-breakpoint
ALTER TABLE `sites` ADD `hsts_max_age` integer;